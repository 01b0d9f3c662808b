// Numbers as a person reads them: bytes in KiB/MiB, counts with separators, durations in their
// unit, times in the browser's zone with milliseconds. Pure functions of what the server answered
// (64-bit integers arrive as strings in protobuf JSON).

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
// Made at the first count, not when the page loads: the first Intl formatter of a page costs tens
// of milliseconds, which held up the page's first call.
let numbers = null;

function number(value) {
  const n = Number(value || 0);
  return Number.isFinite(n) ? n : 0;
}

// 1234567 -> "1,234,567" (in the browser's locale).
export function count(value) {
  numbers ??= new Intl.NumberFormat();
  return numbers.format(number(value));
}

// (1, "entry", "entries") -> "1 entry", (1234, ...) -> "1,234 entries".
export function counted(value, one, many) {
  return `${count(value)} ${number(value) === 1 ? one : many}`;
}

// 67108864 -> "64 MiB", 1536 -> "1.5 KiB", 900 -> "900 B".
export function bytes(value) {
  let n = number(value);
  let unit = 0;
  while (Math.abs(n) >= 1024 && unit < BYTE_UNITS.length - 1) {
    n /= 1024;
    unit += 1;
  }
  const shown = unit === 0 || Math.abs(n) >= 10 ? Math.round(n) : Math.round(n * 10) / 10;
  return `${shown} ${BYTE_UNITS[unit]}`;
}

function pad(n, width = 2) {
  return String(n).padStart(width, "0");
}

// 850 -> "850 ms", 2345 -> "2.35 s", 245000 -> "4 min 05 s", 86400000 -> "24 h", 3 days -> "3 d".
export function duration(milliseconds) {
  const ms = number(milliseconds);
  const sign = ms < 0 ? "-" : "";
  const abs = Math.abs(ms);
  if (abs < 1000) return `${sign}${Math.round(abs)} ms`;
  // Up to what still shows under a minute at one decimal (59.95 s would read "60.0 s").
  if (abs < 59_950) return `${sign}${(abs / 1000).toFixed(abs < 9_995 ? 2 : 1)} s`;
  const seconds = Math.round(abs / 1000);
  if (seconds < 3600) return `${sign}${Math.floor(seconds / 60)} min ${pad(seconds % 60)} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 48 * 60) {
    const rest = minutes % 60;
    return `${sign}${Math.floor(minutes / 60)} h` + (rest ? ` ${pad(rest)} min` : "");
  }
  const hours = Math.round(minutes / 60);
  return `${sign}${Math.floor(hours / 24)} d` + (hours % 24 ? ` ${hours % 24} h` : "");
}

export function seconds(value) {
  return duration(number(value) * 1000);
}

// The zone's offset on that date: "UTC", "UTC+05:30", "UTC-08:00".
export function zoneOffset(date) {
  const minutes = -date.getTimezoneOffset();
  if (minutes === 0) return "UTC";
  const abs = Math.abs(minutes);
  return `UTC${minutes < 0 ? "-" : "+"}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

// The browser's time zone, as the header names it: "Asia/Kolkata (UTC+05:30)".
export function zoneName(date = new Date()) {
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  return `${name} (${zoneOffset(date)})`;
}

// A protobuf Timestamp (RFC 3339) in local time: "2026-12-07 18:21:31.123 UTC+05:30";
// { ms: false } stops at the second, { zone: false } leaves the zone out.
export function time(timestamp, { ms = true, zone = true } = {}) {
  if (!timestamp) return "";
  const d = new Date(timestamp);
  if (Number.isNaN(d.getTime())) return String(timestamp);
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  let clock = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (ms) clock += "." + pad(d.getMilliseconds(), 3);
  return `${day} ${clock}` + (zone ? ` ${zoneOffset(d)}` : "");
}

// Microseconds since the epoch of a protobuf JSON Timestamp ("…T12:51:31.123456Z"): a Date keeps
// only milliseconds, and two rounds are often a few milliseconds apart.
function micros(timestamp) {
  const match = /^(.*?)(?:\.(\d+))?Z$/.exec(timestamp);
  if (!match) return new Date(timestamp).getTime() * 1000;
  return new Date(match[1] + "Z").getTime() * 1000 + Number((match[2] || "").padEnd(6, "0").slice(0, 6));
}

// Milliseconds from one Timestamp to another, to the microsecond; null when either is missing.
export function between(earlier, later) {
  if (!earlier || !later) return null;
  return (micros(later) - micros(earlier)) / 1000;
}
