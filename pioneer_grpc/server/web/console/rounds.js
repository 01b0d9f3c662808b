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
