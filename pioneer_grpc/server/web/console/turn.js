// The turn pane: the turn's manifest events (from the thread's rounds model), section by section
// with the cache boundary and the diff against the thread's event before each; then what the model
// saw in each round the server kept (ListRenderedRounds). Every manifest event and kept round has a
// link of its own (#…&event=ID, #…&round=N).
//
// A section that changed is drawn by sectionChange(): fingerprints today; when DiffManifests answers
// the changed lines, a diff view of them goes there, and every place that shows a change gets it.

import { call } from "./rpc.js";
import { byId, bytesEl, clipped, el, enumName, short, timeEl } from "./dom.js";
import * as route from "./route.js";
import * as units from "./units.js";
import { breakDetail, cause, reported, roundTime } from "./timeline.js";

const KEPT_RETRIES = 10;
const KEPT_RETRY_MS = 200;
const STABLE = "SECTION_STABILITY_STABLE";

export class TurnPane {
  constructor() {
    this.threadId = "";
    this.turnId = "";
    // Whether the kept rounds of the turn shown have been read.
    this.keptShown = false;
  }

  show(threadId, turnId, turn) {
    this.threadId = threadId;
    this.turnId = turnId;
    byId("turn-hint").hidden = true;
    byId("turn").hidden = false;
    byId("turn-title").textContent = turnId;
    this.describe(turn);
    this.keptShown = false;
    byId("kept").replaceChildren();
  }

  describe(turn) {
    byId("turn-meta").replaceChildren(
      el("span", {}, "thread ", el("a", { href: route.href({ thread: this.threadId }) }, this.threadId)),
      turn ? el("span", { "data-field": "status" }, enumName(turn.status, "TURN_STATUS_")) : null,
      turn ? el("span", { "data-field": "entries" }, units.counted(turn.entryCount, "stored entry", "stored entries")) : null,
      turn ? el("span", {}, "created ", timeEl(turn.createTime)) : null,
    );
  }

  // The turn's rounds in the thread's timeline: when, the usage, and what broke the prefix (the
  // section, or the entries a summary, a clearing or the cap took), each linked (…&at=N).
  renderTimeline(rounds) {
    const box = byId("turn-timeline");
    if (!rounds.length) {
      box.replaceChildren();
      return;
    }
    box.replaceChildren(
      el("h3", {}, `Rounds of this turn in the timeline (${units.count(rounds.length)})`),
      el(
        "ol",
        { class: "tl-rounds" },
        rounds.map((round) => {
          const found = cause(round);
          const usage = round.usage || {};
          return el(
            "li",
            { class: "round tl-round" + (found ? " broke" : ""), "data-testid": "turn-round", "data-round": round.round, "data-cause": found || null },
            // The link is a line of its own (li.tl-round > a is a block): the facts are the next one.
            el("a", { class: "anchor", href: this.link({ at: round.round }) }, `Round ${round.round}`),
            el(
              "span",
              { class: "meta", "data-testid": "round-facts" },
              timeEl(roundTime(round)),
              ` · manifest event #${usage.manifestEventId} · ${enumName(round.historyDecision, "HISTORY_DECISION_")}`,
              reported(round) ? "" : el("span", { class: "unreported", "data-testid": "not-reported" }, " · usage not reported"),
            ),
            found ? el("div", { class: "break-detail", "data-testid": "round-break" }, el("span", { class: "badge break" }, found), " ", breakDetail(round)) : null,
          );
        }),
      ),
    );
  }

  hide() {
    this.threadId = "";
    this.turnId = "";
    byId("turn").hidden = true;
    byId("turn-hint").hidden = false;
  }

  link(extra) {
    return route.href({ thread: this.threadId, turn: this.turnId, ...extra });
  }

  renderManifests(rounds, freshEventId) {
    const events = rounds.forTurn(this.turnId);
    const box = byId("manifest-rounds");
    box.replaceChildren(
      el(
        "h3",
        { title: "A round records a manifest event when its compiled system prompt differs from its turn's last one" },
        `Manifest events of this turn (${units.count(events.length)})`,
      ),
      ...events.map((e) => this.manifestView(rounds, e, e.eventId === freshEventId)),
    );
    if (!events.length) {
      box.append(el("p", { class: "hint" }, rounds.caughtUp ? "No manifest recorded for this turn yet." : "Reading the thread's events…"));
    }
  }

  manifestView(rounds, event, fresh) {
    const manifest = event.manifest || {};
    const diff = rounds.diff(event);
    const breakSection = rounds.breakSection(event);
    const changed = new Set((diff?.changes || []).map((c) => c.sectionId));
    const previous = rounds.previous(event);
    let cache;
    if (!previous) cache = el("span", { class: "badge" }, "first manifest of the thread");
    else if (breakSection) cache = el("span", { class: "badge break", "data-testid": "cache-break" }, `cache break at ${breakSection}`);
    else cache = el("span", { class: "badge same", title: "Whether the provider read it from its cache depends on the body's breakpoints" }, "stable half unchanged");
    const after = previous ? units.between(previous.createTime, event.createTime) : null;
    const diagnostics = (manifest.diagnostics || []).map((d) =>
      el("li", {}, el("code", {}, d.code), " ", d.message, d.sectionId ? ` (${d.sectionId})` : ""),
    );
    const changes = (diff?.changes || []).map((change) => sectionChange(change, breakSection));
    return el(
      "article",
      { class: "round" + (fresh ? " new" : ""), "data-testid": "manifest-round", "data-event": event.eventId },
      el(
        "h4",
        {},
        el("a", { class: "anchor", href: this.link({ event: event.eventId }), title: "Link to this manifest event" }, `Manifest event #${event.eventId}`),
        " · ",
        timeEl(event.createTime),
        after !== null ? el("span", { class: "meta-inline", "data-testid": "after-previous" }, ` · ${units.duration(after)} after #${previous.eventId}`) : null,
        " ",
        cache,
      ),
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
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            el("th", {}, "section"),
            el("th", {}, "stability"),
            el("th", { class: "num", title: "Characters of the section as rendered: its heading and its text" }, "chars rendered"),
            el("th", {}, "fingerprint"),
          ),
        ),
        el("tbody", {}, sectionRows(manifest, breakSection, changed)),
      ),
      previous
        ? el(
            "div",
            {},
            el("h4", {}, "Diff against ", el("a", { href: this.link({ turn: previous.turnId, event: previous.eventId }) }, `event #${previous.eventId}`), previous.turnId !== event.turnId ? ` (${previous.turnId})` : ""),
            changes.length ? el("ul", { class: "changes" }, changes) : el("p", { class: "hint" }, "no section changed"),
          )
        : null,
      el("h4", {}, "Diagnostics"),
      diagnostics.length ? el("ul", { "data-testid": "diagnostics" }, diagnostics) : el("p", { class: "hint" }, "none"),
    );
  }

  // Kept rounds of the turn; waits a little for a fresh event's round (kept just after it is published).
  async renderKept(freshEventId) {
    const { threadId, turnId } = this;
    let answer = null;
    for (let attempt = 0; attempt <= KEPT_RETRIES; attempt += 1) {
      answer = await call("ManifestService", "ListRenderedRounds", { threadId, turnId });
      const rounds = answer.rounds || [];
      const waiting = answer.kept && freshEventId && !rounds.some((r) => r.manifestEventId === freshEventId);
      if (!waiting) break;
      await new Promise((resolve) => setTimeout(resolve, KEPT_RETRY_MS));
    }
    if (threadId !== this.threadId || turnId !== this.turnId) return;
    this.keptShown = true;
    const box = byId("kept");
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
      el(
        "p",
        { class: "hint", "data-testid": "kept-bounds" },
        `Kept by this server: the newest ${units.count(answer.maxRoundsPerThread)} rounds of each thread, `,
        bytesEl(answer.maxTotalBytes),
        ` in all, each for ${units.seconds(answer.maxAgeSeconds)}. `,
        `Rounds of this turn kept: ${units.count(rounds.length)}.`,
      ),
      ...(rounds.length ? [] : [el("p", { class: "hint" }, "No round of this turn is kept (any more).")]),
      ...rounds.map((r) => this.keptView(r, last && r === last && Boolean(freshEventId))),
    );
  }

  keptView(round, fresh) {
    let body = null;
    if (round.providerBodyJson) {
      let text = round.providerBodyJson;
      try {
        text = JSON.stringify(JSON.parse(text), null, 2);
      } catch (_) {
        // shown as sent
      }
      body = el(
        "details",
        { "data-testid": "provider-body" },
        el("summary", {}, `Provider body (${round.providerPath}, `, bytesEl(new TextEncoder().encode(round.providerBodyJson).length), ")"),
        clipped(text),
      );
    }
    const messages = round.messages || [];
    const breakFound = round.historyReport?.prefixBreak;
    return el(
      "article",
      { class: "round" + (fresh ? " new" : ""), "data-testid": "kept-round", "data-round": round.round },
      el(
        "h4",
        {},
        el("a", { class: "anchor", href: this.link({ round: round.round }), title: "Link to this round" }, `Round ${round.round}`),
        " · ",
        el("a", { href: this.link({ event: round.manifestEventId }) }, `manifest event #${round.manifestEventId}`),
        " · ",
        timeEl(round.createTime),
        " · ",
        bytesEl(round.keptBytes),
        " kept ",
        breakFound
          ? el(
              "span",
              { class: "badge break", "data-testid": "prefix-break", title: "The provider's cache serves nothing of this body after this point" },
              `prefix break: ${enumName(breakFound.cause, "PREFIX_BREAK_CAUSE_")}${breakFound.sectionId ? " " + breakFound.sectionId : ""}`,
            )
          : null,
      ),
      el("h4", {}, "History decision"),
      decisionView(round.historyReport || {}),
      el(
        "h4",
        {},
        `Messages the model received (${units.count(messages.length)})`,
        failedCount(messages)
          ? el("span", { "data-field": "failed-results" }, ` · ${units.counted(failedCount(messages), "failed tool result", "failed tool results")}`)
          : null,
      ),
      messages.map(messageView),
      el("h4", {}, "Compiled system prompt"),
      promptView(round.compiledPrompt || {}),
      body,
    );
  }
}

// One section that differs between two manifests, with the lines that changed (from the texts the
// server keeps by fingerprint), or why they cannot be shown.
export function sectionChange(change, breakSection) {
  const moved = change.kind === "SECTION_CHANGE_KIND_MOVED";
  let lines = null;
  if (!moved && change.textKept) {
    lines = el("div", { class: "lines", "data-testid": "changed-lines" }, (change.lineChanges || []).map(lineRun));
    if (change.linesTruncated) lines.append(el("p", { class: "hint" }, "more lines changed than are shown"));
  } else if (!moved) {
    lines = el("p", { class: "hint", "data-testid": "lines-unknown" }, "the text of one side is not kept, so its lines cannot be shown");
  }
  return el(
    "li",
    { class: change.sectionId === breakSection ? "break" : "", "data-testid": "change", "data-section": change.sectionId },
    `${enumName(change.kind, "SECTION_CHANGE_KIND_")} ${change.sectionId} (${enumName(change.stability, "SECTION_STABILITY_")}): `,
    el("code", {}, short(change.baseFingerprint) || "—"),
    " → ",
    el("code", {}, short(change.targetFingerprint) || "—"),
    lines,
  );
}

// A run of lines: the old ones (from line N of the base) then the new ones (from line M of the target).
function lineRun(run) {
  const at = `line ${run.baseLine || 1} → ${run.targetLine || 1}`;
  return el(
    "pre",
    { class: "line-run", "data-testid": "line-run", title: at },
    el("span", { class: "at" }, `@@ ${at}\n`),
    (run.removedLines || []).map((line) => el("span", { class: "removed", "data-testid": "removed-line" }, `- ${line}\n`)),
    (run.addedLines || []).map((line) => el("span", { class: "added", "data-testid": "added-line" }, `+ ${line}\n`)),
  );
}

function boundaryRow(columns) {
  return el("tr", { class: "boundary" }, el("td", { colspan: columns }, "cache boundary: stable above, dynamic below"));
}

function sectionRows(manifest, breakSection, changed) {
  const rows = [];
  let boundaryShown = false;
  for (const section of manifest.sectionFingerprints || []) {
    const stable = section.stability === STABLE;
    if (!stable && !boundaryShown) {
      rows.push(boundaryRow(4));
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
        el("td", { class: "num" }, units.count(section.chars)),
        el("td", {}, el("code", { title: section.fingerprint }, short(section.fingerprint))),
      ),
    );
  }
  return rows;
}

// Where and why the round's body stopped being the previous round's body plus new messages, as the
// server reported it (HistoryDecisionReport.prefix_break): "section soul_core: 1,234 tokens of
// history invalidated, 0 kept".
function prefixBreak(found) {
  const cause = enumName(found.cause, "PREFIX_BREAK_CAUSE_");
  const where = found.sectionId ? ` ${found.sectionId}` : found.entryId ? ` at entry ${found.entryId}` : "";
  return `${cause}${where}: ${units.count(found.tokensInvalidated)} tokens of history invalidated, ${units.count(found.tokensKept)} kept`;
}

function decisionView(report) {
  const rows = [
    ["decision", enumName(report.decision, "HISTORY_DECISION_")],
    ["tokens before", units.count(report.tokensBefore)],
    ["tokens after", units.count(report.tokensAfter)],
    [
      "budget",
      `${units.count(report.budgetTokens)} tokens (threshold ${units.count(report.thresholdTokens)}` +
        (report.lowWaterTokens ? `, low water ${units.count(report.lowWaterTokens)})` : ")"),
    ],
    ["prefix break", report.prefixBreak ? prefixBreak(report.prefixBreak) : "none reported"],
    [
      "entries",
      `${units.count(report.entriesLoaded)} loaded, ${units.count(report.entriesKept)} kept, ${units.count(report.entriesDropped)} left out`,
    ],
    ["summary", enumName(report.summaryUse, "SUMMARY_USE_")],
  ];
  const grid = el("div", { class: "decision", "data-testid": "decision" });
  for (const [name, value] of rows) grid.append(el("span", {}, name), el("span", { "data-field": name }, value));
  const diagnostics = (report.diagnostics || []).map((d) =>
    el("li", {}, el("code", {}, d.code), " ", d.message || "", d.entryId ? ` (entry ${d.entryId})` : ""),
  );
  return el("div", {}, grid, diagnostics.length ? el("ul", { "data-testid": "left-out" }, diagnostics) : null);
}

function failedCount(messages) {
  return messages.filter((m) => m.isError).length;
}

function messageView(message) {
  const calls = (message.toolCalls || []).map((c) => el("div", {}, el("code", {}, `${c.name}(${c.arguments || ""})`)));
  return el(
    "div",
    { class: "message", "data-testid": "message" },
    el("span", { class: "role" }, enumName(message.role, "CHAT_ROLE_"), message.name ? ` · ${message.name}` : ""),
    message.isError ? el("span", { class: "failed", "data-testid": "tool-error" }, " · tool failed") : null,
    message.content ? clipped(message.content) : null,
    calls,
  );
}

// The kept prompt's sections with the manifest's own character counts, so both views count alike.
function promptView(prompt) {
  const chars = new Map((prompt.manifest?.sectionFingerprints || []).map((s) => [s.sectionId, s.chars]));
  const parts = [];
  let boundaryShown = false;
  for (const section of prompt.sections || []) {
    const stable = section.stability === STABLE;
    if (!stable && !boundaryShown) {
      parts.push(el("p", { class: "boundary-line" }, "— cache boundary —"));
      boundaryShown = true;
    }
    parts.push(
      el(
        "details",
        { "data-testid": "prompt-section", "data-section": section.id },
        el(
          "summary",
          { class: stable ? "stable" : "dynamic" },
          `${section.id} · ${units.count(chars.get(section.id))} chars rendered · `,
          el("code", {}, short(section.fingerprint)),
        ),
        el("pre", {}, section.title ? `## ${section.title}\n${section.content || ""}` : section.content || ""),
      ),
    );
  }
  return el("div", {}, parts);
}
