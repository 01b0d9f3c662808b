// A thread's manifest events in id order, each with its diff against the thread's event before it
// (DiffManifests). The counts, the turn list's break markers and a turn's manifest view are all
// drawn from this one model; views ask it, never the events directly.
//
// A manifest event is recorded when a round compiles a system prompt that differs from its turn's
// latest one: a round that compiles the same prompt records none, so a thread has at most as many
// events as PrepareTurn rounds. A break is an event whose stable half differs from the previous
// event's: the server names the first stable section that changed (cacheBreakSectionId), past
// which a provider's prefix cache cannot be read.

export class ThreadRounds {
  constructor(threadId) {
    this.threadId = threadId;
    this.events = [];
    this.diffs = new Map();
    this.byTurn = new Map();
    this.lastEventId = "0";
    // Set by the watch's first heartbeat: every stored event of the thread is here.
    this.caughtUp = false;
  }

  newer(event) {
    return BigInt(event.eventId) > BigInt(this.lastEventId);
  }

  latest() {
    return this.events[this.events.length - 1] || null;
  }

  add(event, diff) {
    this.events.push(event);
    if (!this.byTurn.has(event.turnId)) this.byTurn.set(event.turnId, []);
    this.byTurn.get(event.turnId).push(event);
    if (diff) this.diffs.set(event.eventId, diff);
    this.lastEventId = event.eventId;
  }

  previous(event) {
    const index = this.events.findIndex((e) => e.eventId === event.eventId);
    return index > 0 ? this.events[index - 1] : null;
  }

  diff(event) {
    return this.diffs.get(event.eventId) || null;
  }

  breakSection(event) {
    return this.diff(event)?.cacheBreakSectionId || "";
  }

  forTurn(turnId) {
    return this.byTurn.get(turnId) || [];
  }

  turns() {
    return [...this.byTurn.keys()];
  }

  breaks() {
    return this.events.filter((e) => this.breakSection(e));
  }

  // [[section, breaks]] most first.
  breaksBySection(events = this.events) {
    const counted = new Map();
    for (const event of events) {
      const section = this.breakSection(event);
      if (section) counted.set(section, (counted.get(section) || 0) + 1);
    }
    return [...counted.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  }
}

// The thread's rounds whose provider usage the loop reported (ListRoundUsage, newest first): per
// round what the server expected the provider's cache to read of the body it rendered against what
// the provider reported, the input cost of each at the registry's prices, and, marked, the cause of
// a round's prefix break.
export async function loadRoundUsage(call, threadId) {
  const answer = await call("ManifestService", "ListRoundUsage", { threadId });
  return answer.rounds || [];
}

function tokens(value) {
  return value === undefined || value === null ? "–" : Number(value).toLocaleString("en-US");
}

function usd(value) {
  return value === undefined || value === null ? "–" : `$${Number(value).toFixed(4)}`;
}

function share(read, input) {
  if (read === undefined || read === null || !Number(input)) return "";
  return ` (${Math.round((100 * Number(read)) / Number(input))}%)`;
}

export function breakCause(round) {
  const cause = round.prefixBreak?.cause;
  if (!cause || cause === "PREFIX_BREAK_CAUSE_UNSPECIFIED") return "";
  const name = String(cause).replace("PREFIX_BREAK_CAUSE_", "").toLowerCase().replaceAll("_", " ");
  const detail = round.prefixBreak.sectionId || round.prefixBreak.entryId || "";
  return detail ? `${name}: ${detail}` : name;
}

export function roundUsageRows(rounds, el) {
  return rounds.map((round) => {
    const reported = round.reported || {};
    const cause = breakCause(round);
    const invalidated = round.prefixBreak?.tokensInvalidated;
    return el(
      "tr",
      { "data-testid": "round-usage-row", "data-event-id": round.manifestEventId || "0", class: cause ? "broke" : "" },
      el("td", {}, `${round.turnId} · ${round.turnMessageCount || "?"}`),
      el("td", { "data-testid": "expected-read" }, tokens(round.expectedCacheReadInputTokens) + share(round.expectedCacheReadInputTokens, round.expectedInputTokens)),
      el("td", { "data-testid": "reported-read" }, tokens(reported.cacheReadInputTokens) + share(reported.cacheReadInputTokens, reported.inputTokens)),
      el("td", { "data-testid": "expected-cost" }, usd(round.expectedInputCostUsd)),
      el("td", { "data-testid": "reported-cost" }, usd(round.reportedInputCostUsd)),
      el("td", { "data-testid": "break-cause" }, cause ? `${cause}${invalidated ? ` (${tokens(invalidated)} tokens)` : ""}` : ""),
    );
  });
}
