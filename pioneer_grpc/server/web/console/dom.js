// Building the page's nodes. Text from the server is only ever set as text, never as HTML.

import * as units from "./units.js";

const SHOWN_CHARS = 4000;

export function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function byId(id) {
  return document.getElementById(id);
}

export function short(fingerprint) {
  return (fingerprint || "").slice(0, 12);
}

export function enumName(value, prefix) {
  return String(value || "").replace(prefix, "").toLowerCase().replaceAll("_", " ") || "unspecified";
}

// A server time in local time; the exact value the server sent in `datetime` and the tooltip.
export function timeEl(timestamp, options) {
  if (!timestamp) return null;
  return el("time", { datetime: timestamp, title: timestamp }, units.time(timestamp, options));
}

// Bytes as KiB/MiB, the exact count in the tooltip.
export function bytesEl(value) {
  return el("span", { class: "bytes", title: `${units.count(value)} bytes` }, units.bytes(value));
}

export function clipped(text) {
  const value = text || "";
  if (value.length <= SHOWN_CHARS) return el("pre", {}, value);
  return el("details", {}, el("summary", {}, `${units.count(value.length)} characters`), el("pre", {}, value));
}
