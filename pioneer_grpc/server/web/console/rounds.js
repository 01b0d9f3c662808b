// A thread's manifest events in id order, each with its diff against the thread's event before it
// (DiffManifests). The counts, the turn list's break markers and a turn's manifest view are all
// drawn from this one model; views ask it, never the events directly.
//
// Where the stable half broke is worked out here from the two manifests' section fingerprints (as
// the server names it: the first stable section where they part), so opening a thread reads its
// events in one stream and asks for no diff; a diff (the sections that changed, with their lines)
// is asked for only for the events a turn's view shows (fillDiffs), and for live events.
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
    // event id -> its place in `events`, and the break each event's stable half made (worked out once).
    this.places = new Map();
    this.breaksFound = new Map();
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
    this.places.set(event.eventId, this.events.length);
    this.events.push(event);
    if (!this.byTurn.has(event.turnId)) this.byTurn.set(event.turnId, []);
    this.byTurn.get(event.turnId).push(event);
    if (diff) this.diffs.set(event.eventId, diff);
    this.lastEventId = event.eventId;
  }

  previous(event) {
    const index = this.places.get(event.eventId) ?? -1;
    return index > 0 ? this.events[index - 1] : null;
  }

  diff(event) {
    return this.diffs.get(event.eventId) || null;
  }

  breakSection(event) {
    const diff = this.diff(event);
    if (diff) return diff.cacheBreakSectionId || "";
    if (!this.breaksFound.has(event.eventId)) {
      const previous = this.previous(event);
      this.breaksFound.set(event.eventId, previous ? stableBreak(previous.manifest || {}, event.manifest || {}) : "");
    }
    return this.breaksFound.get(event.eventId);
  }

  // The diffs of `events` not asked for yet, each against the thread's event before it, at once.
  async fillDiffs(events, call) {
    const missing = events.filter((e) => !this.diffs.has(e.eventId) && this.previous(e));
    const diffs = await Promise.all(
      missing.map((e) =>
        call("ManifestService", "DiffManifests", { base: { eventId: this.previous(e).eventId }, target: { eventId: e.eventId } }),
      ),
    );
    missing.forEach((e, i) => this.diffs.set(e.eventId, diffs[i]));
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

// The first stable section where two manifests part (the target's, or the base's when the target
// has no section there); "" when their stable halves are the same.
export function stableBreak(base, target) {
  if (base.fingerprintStable && base.fingerprintStable === target.fingerprintStable) return "";
  const stable = (m) => (m.sectionFingerprints || []).filter((s) => s.stability === "SECTION_STABILITY_STABLE");
  const before = stable(base);
  const after = stable(target);
  const baseFingerprints = new Map(before.map((s) => [s.sectionId, s.fingerprint]));
  for (let i = 0; i < Math.max(before.length, after.length); i += 1) {
    const a = before[i];
    const b = after[i];
    if (a && b && a.sectionId === b.sectionId && a.fingerprint === b.fingerprint) continue;
    // A section new or changed in the target names the break; else the one the target lost.
    if (b && (!a || baseFingerprints.get(b.sectionId) !== b.fingerprint)) return b.sectionId;
    return (a || b).sectionId;
  }
  return "";
}

// The rows of the round usage table (rounds newest first, from the thread's timeline): per round
// what the server expected the provider's cache to read of the body it rendered against what the
// provider reported, the input cost of each at the registry's prices, and, marked, the cause of a
// round's prefix break.
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

// A round the loop has not reported the usage of (RoundUsage.reported unset) reads "not reported"
// where the reported figures go: nothing was expected of it either (that is worked out with the report).
export function roundUsageRows(rounds, el) {
  return rounds.map((round) => {
    const reported = round.reported || {};
    const cause = breakCause(round);
    const invalidated = round.prefixBreak?.tokensInvalidated;
    const notReported = () => el("td", { class: "unreported", "data-testid": "not-reported" }, "not reported");
    return el(
      "tr",
      { "data-testid": "round-usage-row", "data-event-id": round.manifestEventId || "0", class: cause ? "broke" : "" },
      el("td", {}, `${round.turnId} · ${round.turnMessageCount || "?"}`),
      el("td", { "data-testid": "expected-read" }, tokens(round.expectedCacheReadInputTokens) + share(round.expectedCacheReadInputTokens, round.expectedInputTokens)),
      round.reported
        ? el("td", { "data-testid": "reported-read" }, tokens(reported.cacheReadInputTokens) + share(reported.cacheReadInputTokens, reported.inputTokens))
        : notReported(),
      el("td", { "data-testid": "expected-cost" }, usd(round.expectedInputCostUsd)),
      round.reported ? el("td", { "data-testid": "reported-cost" }, usd(round.reportedInputCostUsd)) : notReported(),
      el("td", { "data-testid": "break-cause" }, cause ? `${cause}${invalidated ? ` (${tokens(invalidated)} tokens)` : ""}` : ""),
    );
  });
}
