// A thread's timeline (ListThreadTimeline, oldest first, up to 1,000 rounds a call): every round
// the server committed (its usage "not reported" until the loop reports it), on a time axis, each
// prefix break marked with its cause, and the rounds below it, all of them or only the breaks. Each
// break links to its turn and round (#thread=…&turn=…&at=N), so a mark is a jump and the URL a
// deep link.

import { el, enumName, timeEl } from "./dom.js";
import * as route from "./route.js";
import * as units from "./units.js";

const PAGE = 1000;

export async function loadTimeline(call, threadId) {
  const rounds = [];
  let pageToken = "";
  let totals = { totalRounds: 0, totalBreaks: 0 };
  do {
    const answer = await call("ManifestService", "ListThreadTimeline", { threadId, pageSize: PAGE, pageToken });
    rounds.push(...(answer.rounds || []));
    totals = answer;
    pageToken = answer.nextPageToken || "";
  } while (pageToken);
  return { rounds, totalRounds: totals.totalRounds || 0, totalBreaks: totals.totalBreaks || 0 };
}

export function cause(round) {
  const found = round.usage?.prefixBreak?.cause;
  return found && found !== "PREFIX_BREAK_CAUSE_UNSPECIFIED" ? enumName(found, "PREFIX_BREAK_CAUSE_") : "";
}

// The link to a round of the timeline: its turn, the round's place, its manifest event.
export function roundHref(threadId, round) {
  return route.href({ thread: threadId, turn: round.usage?.turnId || "", at: round.round });
}

// The round's time: when it was committed, else (a round only reported) when it was reported.
export function roundTime(round) {
  const usage = round.usage || {};
  return usage.prepareTime || usage.reportTime;
}

// Whether the loop reported the round's usage (RoundUsage.reported is set only then).
export function reported(round) {
  return Boolean(round.usage?.reported);
}

// What a break took besides its cause: "u1-q · 12 entries summarized: u1-a, u1-b, …", "soul_core".
export function breakDetail(round) {
  const found = round.usage?.prefixBreak || {};
  if (!cause(round)) return "";
  const ids = found.entryIds || [];
  const done = { summary: "summarized", clearing: "cleared", "turn cap": "dropped", truncation: "dropped" }[cause(round)];
  const entries = done && found.entryCount
    ? `${units.counted(found.entryCount, "entry", "entries")} ${done}: ${ids.join(", ")}${found.entryCount > ids.length ? ", …" : ""}`
    : "";
  return [found.sectionId || found.entryId || "", entries].filter(Boolean).join(" · ");
}

// The cause with what it took, where no badge names the cause: "summary: u1-q · 12 entries …".
export function breakText(round) {
  const found = cause(round);
  const detail = breakDetail(round);
  return found && detail ? `${found}: ${detail}` : found;
}

function micros(timestamp) {
  return new Date(timestamp).getTime();
}

const SVG = "http://www.w3.org/2000/svg";
// The ticks' drawing is this wide; stretched to the track's width.
const TICKS_WIDTH = 1000;

// Every round's tick as one path (one node for a thousand rounds, not one each).
function ticks(places) {
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", places.map((x) => `M${(TICKS_WIDTH * x).toFixed(2)} 0V1`).join(""));
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "ticks");
  svg.setAttribute("viewBox", `0 0 ${TICKS_WIDTH} 1`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("aria-hidden", "true");
  svg.append(path);
  return svg;
}

// The axis: each round a tick at its time, each break a mark of its cause's colour, linked.
function axis(threadId, rounds) {
  const times = rounds.map((r) => micros(roundTime(r)));
  const first = Math.min(...times);
  const last = Math.max(...times);
  const span = Math.max(1, last - first);
  const places = times.map((t) => (t - first) / span);
  const marks = [];
  rounds.forEach((round, i) => {
    const found = cause(round);
    if (!found) return;
    const mark = el(
      "a",
      {
        class: `mark cause-${found.replaceAll(" ", "-")}`,
        href: roundHref(threadId, round),
        title: `round ${round.round} · ${units.time(roundTime(round))} · ${breakText(round)}`,
        "data-testid": "timeline-break",
        "data-round": round.round,
        "data-cause": found,
      },
      "",
    );
    // Placed through the CSSOM: the page's policy refuses style attributes (style-src 'self').
    mark.style.left = `${(100 * places[i]).toFixed(3)}%`;
    marks.push(mark);
  });
  return el(
    "div",
    { class: "axis", "data-testid": "time-axis" },
    el("div", { class: "track" }, ticks(places.filter((_, i) => !cause(rounds[i]))), marks),
    el(
      "div",
      { class: "axis-labels" },
      timeEl(roundTime(rounds[0]), { ms: false, zone: false }),
      el("span", {}, units.duration(last - first)),
      timeEl(roundTime(rounds[rounds.length - 1]), { ms: false, zone: false }),
    ),
  );
}

function row(threadId, round) {
  const usage = round.usage || {};
  const figures = usage.reported || {};
  const found = cause(round);
  const detail = breakDetail(round);
  const tokens = (value) => (value === undefined || value === null ? "–" : units.count(value));
  return el(
    "li",
    { class: "tl-round" + (found ? " broke" : ""), "data-testid": "timeline-round", "data-round": round.round, "data-cause": found || null },
    el(
      "a",
      { href: roundHref(threadId, round) },
      el("span", { class: "name" }, `#${round.round} · ${usage.turnId}`, found ? el("span", { class: "badge break" }, found) : null),
      el(
        "span",
        { class: "meta" },
        timeEl(roundTime(round), { ms: false, zone: false }),
        ` · ${enumName(round.historyDecision, "HISTORY_DECISION_")} · `,
        reported(round)
          ? `${tokens(figures.inputTokens)} in · cache read ${tokens(usage.expectedCacheReadInputTokens)} expected, ${tokens(figures.cacheReadInputTokens)} reported`
          : el("span", { class: "unreported", "data-testid": "not-reported" }, "usage not reported"),
        usage.reportedInputCostUsd !== undefined ? ` · $${Number(usage.reportedInputCostUsd).toFixed(4)}` : "",
      ),
      detail ? el("span", { class: "meta", "data-testid": "break-detail" }, detail) : null,
    ),
  );
}

// The timeline block: a summary, the axis, the filter and the rounds.
export function timelineView(threadId, timeline, breaksOnly, onFilter) {
  const { rounds } = timeline;
  if (!rounds.length) return el("p", { class: "hint" }, "This thread has had no round yet.");
  const byCause = new Map();
  for (const round of rounds) {
    const found = cause(round);
    if (found) byCause.set(found, (byCause.get(found) || 0) + 1);
  }
  const shown = breaksOnly ? rounds.filter((r) => cause(r)) : rounds;
  return el(
    "div",
    {},
    el(
      "p",
      { class: "facts", "data-testid": "timeline-summary" },
      el("span", {}, units.counted(timeline.totalRounds, "round", "rounds")),
      el("span", { "data-testid": "timeline-breaks" }, units.counted(timeline.totalBreaks, "break", "breaks")),
      el("span", {}, [...byCause.entries()].map(([c, n]) => `${c} ×${n}`).join(", ")),
    ),
    axis(threadId, rounds),
    el(
      "label",
      { class: "filter" },
      el("input", { type: "checkbox", "data-testid": "breaks-only", checked: breaksOnly, onchange: (e) => onFilter(e.target.checked) }),
      " breaks only",
    ),
    el("ol", { class: "tl-rounds", "data-testid": "timeline-rounds" }, shown.map((r) => row(threadId, r))),
  );
}
