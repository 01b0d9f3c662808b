// The thread pane: what the thread is (GetThread), its counts from the rounds model, and its turns
// (ListTurns, oldest first, a page at a time), each a link to the turn's view, marked when one of
// its manifest events broke the prefix cache.
//
// Its timeline (ListThreadTimeline, one call for up to 1,000 rounds) is drawn on a time axis with a
// "breaks only" filter, and gives the round usage table its newest rounds.

import { call } from "./rpc.js";
import { byId, el, enumName, timeEl } from "./dom.js";
import * as route from "./route.js";
import * as units from "./units.js";
import { roundUsageRows } from "./rounds.js";
import { cause, loadTimeline, timelineView } from "./timeline.js";

// ListTurns' largest page: a 1,000-turn thread's turns in one call, so a link to its last turn
// opens without paging.
const TURN_PAGE = 1000;
// Rows of the round usage table: the newest rounds of the timeline.
const USAGE_ROWS = 50;

export class ThreadPane {
  constructor() {
    this.threadId = "";
    this.turns = new TurnList();
    this.timeline = null;
    this.breaksOnly = false;
    this.onTimeline = () => {};
  }

  show(threadId) {
    this.threadId = threadId;
    byId("thread-hint").hidden = true;
    byId("thread").hidden = false;
    byId("thread-title").textContent = threadId;
    byId("thread-meta").replaceChildren();
    byId("timeline-body").replaceChildren(el("p", { class: "hint" }, "reading the timeline…"));
    this.timeline = null;
    this.turns.open(threadId);
  }

  hide() {
    this.threadId = "";
    byId("thread").hidden = true;
    byId("thread-hint").hidden = false;
    this.turns.open("");
  }

  async describe(threadId) {
    // The timeline is asked for beside GetThread: on a long thread it is the longer answer.
    const usage = this.renderUsage(threadId);
    const { thread } = await call("HistoryService", "GetThread", { threadId });
    if (threadId !== this.threadId || !thread) {
      await usage.catch(() => {});
      return null;
    }
    const config = thread.config || {};
    byId("thread-meta").replaceChildren(
      config.model ? el("span", { "data-field": "model" }, config.model) : null,
      el("span", { "data-field": "entries" }, units.counted(thread.entryCount, "stored entry", "stored entries")),
      config.maxContextTokens ? el("span", {}, `window ${units.count(config.maxContextTokens)} tokens`) : null,
      el("span", {}, "created ", timeEl(thread.createTime)),
      el("span", {}, "updated ", timeEl(thread.updateTime)),
      el("button", { type: "button", "data-testid": "delete-thread", onclick: () => this.remove(threadId) }, "Delete thread"),
      this.forkForm(threadId),
    );
    await usage;
    return thread;
  }

  // The timeline, and from it the round usage table (newest first) and the turns' break marks.
  async renderUsage(threadId) {
    const timeline = await loadTimeline(call, threadId);
    if (threadId !== this.threadId) return;
    this.timeline = timeline;
    this.drawTimeline();
    const newest = timeline.rounds.slice(-USAGE_ROWS).reverse().map((r) => r.usage || {});
    byId("round-usage-table").hidden = newest.length === 0;
    byId("round-usage").replaceChildren(...roundUsageRows(newest, el));
    const causes = new Map();
    for (const round of timeline.rounds) {
      const found = cause(round);
      if (!found) continue;
      const turnId = round.usage?.turnId || "";
      causes.set(turnId, [...new Set([...(causes.get(turnId) || []), found])]);
    }
    this.turns.causes = causes;
    for (const turnId of causes.keys()) this.turns.mark(turnId, this.turns.breaks.get(turnId) || [], true);
    this.onTimeline(timeline);
  }

  drawTimeline() {
    if (!this.timeline) return;
    byId("timeline-body").replaceChildren(
      timelineView(this.threadId, this.timeline, this.breaksOnly, (on) => {
        this.breaksOnly = on;
        this.drawTimeline();
      }),
    );
  }

  // The timeline's rounds of a turn (for the turn pane).
  turnRounds(turnId) {
    return (this.timeline?.rounds || []).filter((r) => r.usage?.turnId === turnId);
  }

  // DeleteThread, once confirmed: a viewer's token is refused by the server (the error is shown).
  async remove(threadId) {
    if (!confirm(`Delete thread ${threadId} and everything stored for it? This cannot be undone.`)) return;
    try {
      await call("HistoryService", "DeleteThread", { threadId, allowMissing: true });
    } catch (error) {
      byId("thread-meta").append(el("span", { class: "failed", "data-testid": "delete-error" }, `not deleted: ${error.message}`));
      return;
    }
    window.dispatchEvent(new CustomEvent("thread-deleted", { detail: threadId }));
  }

  // ForkThread: the new thread's id (empty: the server names it) and the completed turn the copy
  // goes up to. A viewer's token is refused by the server, as a delete is (the error is shown).
  forkForm(threadId) {
    const newId = el("input", { "data-testid": "fork-id", placeholder: "new thread id", "aria-label": "new thread id" });
    const turnId = el("input", { "data-testid": "fork-turn", placeholder: "up to turn", "aria-label": "up to turn", required: "" });
    const form = el(
      "form",
      { class: "fork", "data-testid": "fork-form" },
      newId,
      turnId,
      el("button", { type: "submit", "data-testid": "fork-thread" }, "Fork thread"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.fork(threadId, newId.value.trim(), turnId.value.trim()).catch(() => {});
    });
    return form;
  }

  async fork(threadId, newId, turnId) {
    byId("thread-meta").querySelector('[data-testid="fork-error"]')?.remove();
    let forked;
    try {
      forked = await call("HistoryService", "ForkThread", { sourceThreadId: threadId, sourceTurnId: turnId, threadId: newId });
    } catch (error) {
      byId("thread-meta").append(el("span", { class: "failed", "data-testid": "fork-error" }, `not forked: ${error.message}`));
      return;
    }
    window.dispatchEvent(new CustomEvent("thread-forked", { detail: forked.thread.threadId }));
  }

  // The counts table (what each number counts is in its heading's tooltip), and the break markers
  // of `turnId`'s item, or of every turn's when none is named.
  renderCounts(rounds, turnId) {
    const bySection = rounds.breaksBySection().map(([id, n]) => `${id} ×${n}`);
    byId("counts").replaceChildren(
      el(
        "tr",
        { "data-testid": "counts-row" },
        el("td", { "data-testid": "events-count" }, units.count(rounds.events.length)),
        el("td", { "data-testid": "breaks-count" }, units.count(rounds.breaks().length)),
        el("td", { "data-testid": "breaks-by-section" }, bySection.join(", ") || "none"),
      ),
    );
    byId("counts-status").textContent = rounds.caughtUp ? "" : "reading the thread's events…";
    for (const id of turnId ? [turnId] : rounds.turns()) {
      this.turns.mark(id, rounds.breaksBySection(rounds.forTurn(id)).map(([section]) => section));
    }
  }
}

class TurnList {
  constructor() {
    this.list = byId("turns");
    this.moreButton = byId("more-turns");
    this.threadId = "";
    this.pageToken = "";
    // The token that fetched the last page read: read again to find turns begun since.
    this.lastPageToken = "";
    this.selected = "";
    this.info = new Map();
    this.breaks = new Map();
    // Per turn, the causes of its rounds' prefix breaks (from the timeline).
    this.causes = new Map();
    this.onError = () => {};
    this.moreButton.addEventListener("click", () => this.more().catch((error) => this.onError(error)));
  }

  open(threadId) {
    this.threadId = threadId;
    this.pageToken = "";
    this.lastPageToken = "";
    this.selected = "";
    this.info = new Map();
    this.breaks = new Map();
    this.causes = new Map();
    this.list.replaceChildren();
    this.moreButton.hidden = true;
  }

  has(turnId) {
    return this.info.has(turnId);
  }

  get complete() {
    return !this.pageToken;
  }

  async load(pageToken) {
    const threadId = this.threadId;
    const answer = await call("HistoryService", "ListTurns", { threadId, pageSize: TURN_PAGE, pageToken });
    if (threadId !== this.threadId) return false;
    this.lastPageToken = pageToken;
    this.pageToken = answer.nextPageToken || "";
    this.moreButton.hidden = !this.pageToken;
    const added = [];
    for (const turn of answer.turns || []) {
      const known = this.info.has(turn.turnId);
      this.info.set(turn.turnId, turn);
      const item = this.item(turn);
      if (known) this.list.querySelector(`[data-turn="${CSS.escape(turn.turnId)}"]`)?.replaceWith(item);
      else added.push(item);
    }
    this.list.append(...added);
    return true;
  }

  async more() {
    if (!this.complete) await this.load(this.pageToken);
  }

  // Pages on until `turnId` is listed (a link to a turn further down); false if the thread has none.
  async find(turnId) {
    if (!this.list.children.length && !(await this.load(""))) return false;
    while (!this.has(turnId) && !this.complete) {
      if (!(await this.load(this.pageToken))) return false;
    }
    return this.has(turnId);
  }

  // After a live event: the last page read is read again, so the newest turns' counts and status
  // are current and a turn begun since is listed (when every page before it is).
  async refresh() {
    if (this.complete) await this.load(this.lastPageToken);
  }

  item(turn) {
    const id = turn.turnId;
    const sections = this.breaks.get(id) || [];
    const breaks = [...sections, ...(this.causes.get(id) || []).filter((c) => c !== "section" || !sections.length)];
    return el(
      "li",
      {
        class: "pick" + (id === this.selected ? " selected" : "") + (breaks.length ? " has-break" : ""),
        "data-turn": id,
        "data-testid": "turn-item",
      },
      el(
        "a",
        { href: route.href({ thread: this.threadId, turn: id }) },
        el("span", { class: "name" }, id, breaks.length ? breakBadge(breaks) : null),
        el(
          "span",
          { class: "meta" },
          `${enumName(turn.status, "TURN_STATUS_")} · ${units.counted(turn.entryCount, "entry", "entries")} · `,
          timeEl(turn.createTime, { ms: false, zone: false }),
        ),
      ),
    );
  }

  mark(turnId, sections, force = false) {
    const before = (this.breaks.get(turnId) || []).join();
    this.breaks.set(turnId, sections);
    const turn = this.info.get(turnId);
    if (turn && (force || before !== sections.join())) {
      this.list.querySelector(`[data-turn="${CSS.escape(turnId)}"]`)?.replaceWith(this.item(turn));
    }
  }

  select(turnId) {
    this.selected = turnId;
    let picked = null;
    for (const item of this.list.children) {
      item.classList.remove("selected");
      if (item.dataset.turn === turnId) picked = item;
    }
    if (!picked) return;
    // Scrolled to while in the list's flow: once selected it sticks to an edge, always "in view".
    picked.scrollIntoView({ block: "nearest" });
    picked.classList.add("selected");
  }
}

function breakBadge(sections) {
  return el(
    "span",
    { class: "badge break", "data-testid": "turn-break", title: "a round of this turn broke the prefix cache (a section changed, or what is named)" },
    `break: ${sections.join(", ")}`,
  );
}
