// The console: read-only views of threads, turns, manifests and kept rounds.
// Every datum comes from the Connect (HTTP/JSON) calls of the same origin; the
// page itself holds none. Text from the server is only ever set as textContent.
"use strict";

const TOKEN_KEY = "pioneer-console-token";
const THREAD_PAGE = 20;
const TURN_PAGE = 50;
const RECONNECT_MS = 1000;
const KEPT_RETRIES = 10;
const KEPT_RETRY_MS = 200;
const SHOWN_CHARS = 4000;

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  threadsToken: "",
  thread: "",
  turnsToken: "",
  turn: "",
  // The selected thread's manifest events, in id order, and each one's diff with the one before.
  events: [],
  diffs: new Map(),
  lastEventId: "0",
  watch: null,
};

class RpcError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

function headers(contentType) {
  const found = { "content-type": contentType };
  if (state.token) found.authorization = "Bearer " + state.token;
  return found;
}

async function call(service, method, request) {
  const response = await fetch(`/pioneer.v1.${service}/${method}`, {
    method: "POST",
    headers: headers("application/json"),
    body: JSON.stringify(request || {}),
  });
  const text = await response.text();
  const body = text ? JSON.parse(text) : {};
  if (!response.ok) throw new RpcError(body.code || "unknown", body.message || response.statusText, response.status);
  return body;
}

function envelope(message) {
  const data = new TextEncoder().encode(JSON.stringify(message));
  const framed = new Uint8Array(5 + data.length);
  new DataView(framed.buffer).setUint32(1, data.length);
  framed.set(data, 5);
  return framed;
}

// Calls onOpen once the server answered, then onMessage for each message of a server stream;
// resolves at its end, rejects on its error.
async function stream(service, method, request, onOpen, onMessage, signal) {
  const response = await fetch(`/pioneer.v1.${service}/${method}`, {
    method: "POST",
    headers: headers("application/connect+json"),
    body: envelope(request),
    signal,
  });
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new RpcError(body.code || "unknown", body.message || response.statusText, response.status);
  }
  onOpen();
  const reader = response.body.getReader();
  let pending = new Uint8Array(0);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const joined = new Uint8Array(pending.length + value.length);
    joined.set(pending);
    joined.set(value, pending.length);
    pending = joined;
    while (pending.length >= 5) {
      const size = new DataView(pending.buffer, pending.byteOffset).getUint32(1);
      if (pending.length < 5 + size) break;
      const flags = pending[0];
      const message = JSON.parse(new TextDecoder().decode(pending.subarray(5, 5 + size)));
      pending = pending.slice(5 + size);
      if (flags & 0x02) {
        if (message.error) throw new RpcError(message.error.code, message.error.message || "", 200);
        return;
      }
      await onMessage(message);
    }
  }
}

function el(tag, attributes, ...children) {
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

function short(fingerprint) {
  return (fingerprint || "").slice(0, 12);
}

function enumName(value, prefix) {
  return String(value || "").replace(prefix, "").toLowerCase() || "unspecified";
}

function when(timestamp) {
  return timestamp ? new Date(timestamp).toLocaleString() : "";
}

function clipped(text) {
  const value = text || "";
  if (value.length <= SHOWN_CHARS) return el("pre", {}, value);
  return el("details", {}, el("summary", {}, `${value.length} characters`), el("pre", {}, value));
}

function showError(error) {
  document.getElementById("error").textContent = error ? String(error.message || error) : "";
}

// --- token -----------------------------------------------------------------

function askForToken(message) {
  document.getElementById("main").hidden = true;
  document.getElementById("sign-out").hidden = true;
  document.getElementById("token-form").hidden = false;
  document.getElementById("token-error").textContent = message || "";
  document.getElementById("token").focus();
}

async function start() {
  try {
    await loadThreads(true);
  } catch (error) {
    if (error.code === "unauthenticated") {
      askForToken(state.token ? "That token was refused." : "");
      return;
    }
    showError(error);
    return;
  }
  document.getElementById("token-form").hidden = true;
  document.getElementById("main").hidden = false;
  document.getElementById("sign-out").hidden = !state.token;
}

document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("token");
  state.token = input.value;
  input.value = "";
  sessionStorage.setItem(TOKEN_KEY, state.token);
  start();
});

// Forgets the token (another one, another tenant's say, may sign in next) and what it showed.
document.getElementById("sign-out").addEventListener("click", () => {
  if (state.watch) state.watch.abort();
  state.watch = null;
  state.token = "";
  sessionStorage.removeItem(TOKEN_KEY);
  state.thread = "";
  state.turn = "";
  document.getElementById("threads").replaceChildren();
  document.getElementById("thread").hidden = true;
  document.getElementById("thread-hint").hidden = false;
  document.getElementById("turn").hidden = true;
  document.getElementById("turn-hint").hidden = false;
  setLive(false, "not watching");
  askForToken("");
});

// --- threads ---------------------------------------------------------------

async function loadThreads(first) {
  if (first) state.threadsToken = "";
  const page = await call("HistoryService", "ListThreads", {
    pageSize: THREAD_PAGE,
    pageToken: state.threadsToken,
    orderBy: "create_time desc",
  });
  const list = document.getElementById("threads");
  if (first) list.replaceChildren();
  for (const thread of page.threads || []) {
    list.append(
      el(
        "li",
        {
          class: "pick" + (thread.threadId === state.thread ? " selected" : ""),
          "data-thread": thread.threadId,
          "data-testid": "thread",
          onclick: () => selectThread(thread.threadId),
        },
        thread.threadId,
        el("span", { class: "meta" }, `${thread.entryCount || 0} entries · ${when(thread.createTime)}`),
      ),
    );
  }
  state.threadsToken = page.nextPageToken || "";
  document.getElementById("more-threads").hidden = !state.threadsToken;
}

document.getElementById("more-threads").addEventListener("click", () => loadThreads(false).catch(showError));

function markSelected(listId, attribute, value) {
  for (const item of document.getElementById(listId).children) {
    item.classList.toggle("selected", item.getAttribute(attribute) === value);
  }
}

async function selectThread(threadId) {
  state.thread = threadId;
  state.turn = "";
  state.events = [];
  state.diffs = new Map();
  state.lastEventId = "0";
  markSelected("threads", "data-thread", threadId);
  document.getElementById("thread-hint").hidden = true;
  document.getElementById("thread").hidden = false;
  document.getElementById("thread-title").textContent = threadId;
  document.getElementById("turn").hidden = true;
  document.getElementById("turn-hint").hidden = false;
  renderBreaks();
  try {
    await loadTurns(true);
  } catch (error) {
    showError(error);
  }
  watch(threadId);
}

// --- turns -----------------------------------------------------------------

async function loadTurns(first) {
  if (first) state.turnsToken = "";
  const threadId = state.thread;
  const page = await call("HistoryService", "ListTurns", {
    threadId,
    pageSize: TURN_PAGE,
    pageToken: state.turnsToken,
  });
  if (threadId !== state.thread) return;
  const list = document.getElementById("turns");
  if (first) list.replaceChildren();
  for (const turn of page.turns || []) {
    list.append(
      el(
        "li",
        {
          class: "pick" + (turn.turnId === state.turn ? " selected" : ""),
          "data-turn": turn.turnId,
          "data-testid": "turn-item",
          onclick: () => selectTurn(turn.turnId),
        },
        turn.turnId,
        el(
          "span",
          { class: "meta" },
          `${enumName(turn.status, "TURN_STATUS_")} · ${turn.entryCount || 0} entries · ${when(turn.createTime)}`,
        ),
      ),
    );
  }
  state.turnsToken = page.nextPageToken || "";
  document.getElementById("more-turns").hidden = !state.turnsToken;
}

document.getElementById("more-turns").addEventListener("click", () => loadTurns(false).catch(showError));

async function selectTurn(turnId) {
  state.turn = turnId;
  markSelected("turns", "data-turn", turnId);
  document.getElementById("turn-hint").hidden = true;
  document.getElementById("turn").hidden = false;
  document.getElementById("turn-title").textContent = `${state.thread} · ${turnId}`;
  renderManifestRounds();
  await renderKept().catch(showError);
}

// --- live manifest events --------------------------------------------------

function setLive(on, text) {
  const badge = document.getElementById("live");
  badge.className = "live " + (on ? "on" : "off");
  badge.textContent = text;
}

function watch(threadId) {
  if (state.watch) state.watch.abort();
  const controller = new AbortController();
  state.watch = controller;
  const run = async () => {
    while (!controller.signal.aborted && state.thread === threadId) {
      try {
        await stream(
          "ManifestService",
          "WatchManifests",
          { threadId, afterEventId: state.lastEventId },
          () => setLive(true, "live"),
          (message) => onWatchMessage(threadId, message),
          controller.signal,
        );
      } catch (error) {
        if (controller.signal.aborted) return;
        if (error.code === "unauthenticated") {
          askForToken("The token was refused.");
          return;
        }
      }
      if (controller.signal.aborted) return;
      // Ended by the server (shutdown, slow observer) or the network: resume after the last event seen.
      setLive(false, "reconnecting…");
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
  };
  run();
}

async function onWatchMessage(threadId, message) {
  if (state.thread !== threadId) return;
  if (message.heartbeat) {
    setLive(true, "live");
    return;
  }
  const event = message.event;
  if (!event) return;
  if (BigInt(event.eventId) <= BigInt(state.lastEventId)) return;
  state.lastEventId = event.eventId;
  const previous = state.events[state.events.length - 1];
  state.events.push(event);
  if (previous) {
    const diff = await call("ManifestService", "DiffManifests", {
      base: { eventId: previous.eventId },
      target: { eventId: event.eventId },
    });
    state.diffs.set(event.eventId, diff);
  }
  if (state.thread !== threadId) return;
  renderBreaks();
  const known = [...document.getElementById("turns").children].some((li) => li.dataset.turn === event.turnId);
  if (!known) await loadTurns(true);
  if (event.turnId === state.turn) {
    renderManifestRounds(event.eventId);
    await renderKept(event.eventId);
  }
}

// The table `pioneer-grpc watch --stats` prints: rounds, breaks, by the section that broke.
function renderBreaks() {
  const breaks = new Map();
  let count = 0;
  for (const event of state.events) {
    const section = state.diffs.get(event.eventId)?.cacheBreakSectionId;
    if (!section) continue;
    count += 1;
    breaks.set(section, (breaks.get(section) || 0) + 1);
  }
  const bySection = [...breaks.entries()].sort((a, b) => b[1] - a[1]).map(([id, n]) => `${id} ×${n}`);
  document
    .querySelector("#breaks tbody")
    .replaceChildren(
      el(
        "tr",
        { "data-testid": "breaks-row" },
        el("td", { "data-testid": "rounds-count" }, state.events.length),
        el("td", { "data-testid": "breaks-count" }, count),
        el("td", { "data-testid": "breaks-by-section" }, bySection.join(", ") || "none"),
      ),
    );
}

// --- a turn: its manifests (rounds that compiled), then what was kept ------

function sectionRows(manifest, breakSection, changed) {
  const rows = [];
  let boundaryShown = false;
  for (const section of manifest.sectionFingerprints || []) {
    const stable = section.stability === "SECTION_STABILITY_STABLE";
    if (!stable && !boundaryShown) {
      rows.push(el("tr", { class: "boundary" }, el("td", { colspan: 4 }, "cache boundary: stable above, dynamic below")));
      boundaryShown = true;
    }
    const isBreak = section.sectionId === breakSection;
    rows.push(
      el(
        "tr",
        {
          class: isBreak ? "break" : changed.has(section.sectionId) ? "changed" : "",
          "data-section": section.sectionId,
          "data-break": isBreak ? "true" : null,
        },
        el("td", { class: stable ? "stable" : "dynamic" }, section.sectionId),
        el("td", {}, stable ? "stable" : "dynamic"),
        el("td", {}, section.chars || 0),
        el("td", {}, el("code", { title: section.fingerprint }, short(section.fingerprint))),
      ),
    );
  }
  return rows;
}

function previousEventOf(event) {
  const index = state.events.findIndex((e) => e.eventId === event.eventId);
  return index > 0 ? state.events[index - 1] : null;
}

function renderManifestRound(event, fresh) {
  const manifest = event.manifest || {};
  const diff = state.diffs.get(event.eventId);
  const breakSection = diff?.cacheBreakSectionId || "";
  const changed = new Set((diff?.changes || []).map((c) => c.sectionId));
  const previous = previousEventOf(event);
  let cache;
  if (!previous) cache = el("span", { class: "badge" }, "first round of the thread");
  else if (breakSection)
    cache = el("span", { class: "badge break", "data-testid": "cache-break" }, `cache break at ${breakSection}`);
  else cache = el("span", { class: "badge kept" }, "prefix cache kept");
  const changes = (diff?.changes || []).map((change) =>
    el(
      "li",
      { class: change.sectionId === breakSection ? "break" : "", "data-testid": "change" },
      `${enumName(change.kind, "SECTION_CHANGE_KIND_")} ${change.sectionId} (${enumName(change.stability, "SECTION_STABILITY_")}): `,
      el("code", {}, short(change.baseFingerprint) || "—"),
      " → ",
      el("code", {}, short(change.targetFingerprint) || "—"),
    ),
  );
  const diagnostics = (manifest.diagnostics || []).map((d) =>
    el("li", {}, el("code", {}, d.code), " ", d.message, d.sectionId ? ` (${d.sectionId})` : ""),
  );
  return el(
    "div",
    { class: "round" + (fresh ? " new" : ""), "data-testid": "manifest-round", "data-event": event.eventId },
    el("h4", {}, `Manifest event #${event.eventId} · ${when(event.createTime)} `, cache),
    el(
      "div",
      { class: "meta" },
      "stable ",
      el("code", {}, short(manifest.fingerprintStable)),
      " · dynamic ",
      el("code", {}, short(manifest.fingerprintDynamic)),
      " · full ",
      el("code", {}, short(manifest.fingerprintFull)),
    ),
    el(
      "table",
      { "data-testid": "sections" },
      el("thead", {}, el("tr", {}, el("th", {}, "section"), el("th", {}, "stability"), el("th", {}, "chars"), el("th", {}, "fingerprint"))),
      el("tbody", {}, sectionRows(manifest, breakSection, changed)),
    ),
    previous
      ? el("div", {}, el("h4", {}, `Diff against event #${previous.eventId}`), changes.length ? el("ul", {}, changes) : el("p", { class: "hint" }, "no section changed"))
      : null,
    el("h4", {}, "Diagnostics"),
    diagnostics.length ? el("ul", { "data-testid": "diagnostics" }, diagnostics) : el("p", { class: "hint" }, "none"),
  );
}

function renderManifestRounds(freshEventId) {
  const events = state.events.filter((e) => e.turnId === state.turn);
  const box = document.getElementById("manifest-rounds");
  box.replaceChildren(
    el("h3", {}, `Compiled prompts (${events.length})`),
    ...events.map((e) => renderManifestRound(e, e.eventId === freshEventId)),
  );
  if (!events.length) box.append(el("p", { class: "hint" }, "No manifest recorded for this turn yet."));
}

function decisionView(report) {
  const rows = [
    ["decision", enumName(report.decision, "HISTORY_DECISION_")],
    ["tokens before", report.tokensBefore || 0],
    ["tokens after", report.tokensAfter || 0],
    ["budget", `${report.budgetTokens || 0} (threshold ${report.thresholdTokens || 0})`],
    ["entries", `${report.entriesLoaded || 0} loaded, ${report.entriesKept || 0} kept, ${report.entriesDropped || 0} left out`],
    ["summary", enumName(report.summaryUse, "SUMMARY_USE_")],
  ];
  const grid = el("div", { class: "decision", "data-testid": "decision" });
  for (const [name, value] of rows) grid.append(el("span", {}, name), el("span", { "data-field": name }, value));
  const diagnostics = (report.diagnostics || []).map((d) =>
    el("li", {}, el("code", {}, d.code), " ", d.message || "", d.entryId ? ` (entry ${d.entryId})` : ""),
  );
  return el("div", {}, grid, diagnostics.length ? el("ul", { "data-testid": "left-out" }, diagnostics) : null);
}

function messageView(message) {
  const calls = (message.toolCalls || []).map((c) => el("div", {}, el("code", {}, `${c.name}(${c.arguments || ""})`)));
  return el(
    "div",
    { class: "message", "data-testid": "message" },
    el("span", { class: "role" }, enumName(message.role, "CHAT_ROLE_"), message.name ? ` · ${message.name}` : ""),
    message.content ? clipped(message.content) : null,
    calls,
  );
}

function promptView(prompt) {
  const sections = prompt.sections || [];
  const parts = [];
  let boundaryShown = false;
  for (const section of sections) {
    const stable = section.stability === "SECTION_STABILITY_STABLE";
    if (!stable && !boundaryShown) {
      parts.push(el("p", { class: "boundary-line" }, "— cache boundary —"));
      boundaryShown = true;
    }
    parts.push(
      el(
        "details",
        { "data-testid": "prompt-section", "data-section": section.id },
        el("summary", { class: stable ? "stable" : "dynamic" }, `${section.id} · ${(section.content || "").length} chars · `, el("code", {}, short(section.fingerprint))),
        el("pre", {}, section.content || ""),
      ),
    );
  }
  return el("div", {}, parts);
}

function keptRoundView(round, fresh) {
  let body = null;
  if (round.providerBodyJson) {
    let text = round.providerBodyJson;
    try {
      text = JSON.stringify(JSON.parse(text), null, 2);
    } catch (_) {
      // shown as sent
    }
    body = el("details", { "data-testid": "provider-body" }, el("summary", {}, `Provider body (${round.providerPath})`), clipped(text));
  }
  const messages = round.messages || [];
  return el(
    "div",
    { class: "round" + (fresh ? " new" : ""), "data-testid": "kept-round", "data-round": round.round },
    el("h4", {}, `Round ${round.round} · manifest event #${round.manifestEventId} · ${when(round.createTime)}`),
    el("h4", {}, "History decision"),
    decisionView(round.historyReport || {}),
    el("h4", {}, `Messages the model received (${messages.length})`),
    messages.map(messageView),
    el("h4", {}, "Compiled system prompt"),
    promptView(round.compiledPrompt || {}),
    body,
  );
}

async function renderKept(freshEventId) {
  const threadId = state.thread;
  const turnId = state.turn;
  let answer = null;
  for (let attempt = 0; attempt <= KEPT_RETRIES; attempt += 1) {
    answer = await call("ManifestService", "ListRenderedRounds", { threadId, turnId });
    const rounds = answer.rounds || [];
    // A round is kept just after its manifest event is published: wait for it a little.
    const waiting = answer.kept && freshEventId && !rounds.some((r) => r.manifestEventId === freshEventId);
    if (!waiting) break;
    await new Promise((resolve) => setTimeout(resolve, KEPT_RETRY_MS));
  }
  if (state.thread !== threadId || state.turn !== turnId) return;
  const box = document.getElementById("kept");
  if (!answer.kept) {
    box.replaceChildren(
      el(
        "p",
        { class: "not-kept", "data-testid": "not-kept" },
        "This server does not keep rendered requests, so the prompt text, the history decision, the messages and the provider body of each round are not available. Start it with --keep-rendered-requests to keep them.",
      ),
    );
    return;
  }
  const rounds = answer.rounds || [];
  const last = rounds[rounds.length - 1];
  box.replaceChildren(
    el("p", { class: "hint" }, `Kept: the last ${answer.maxRoundsPerThread} rounds per thread, ${answer.maxTotalBytes} bytes in all, for ${answer.maxAgeSeconds} s.`),
    ...(rounds.length ? [] : [el("p", { class: "hint" }, "No round of this turn is kept (any more).")]),
    ...rounds.map((r) => keptRoundView(r, last && r === last && Boolean(freshEventId))),
  );
}

start();
