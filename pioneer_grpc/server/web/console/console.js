// The console: read-only views of threads, turns, manifests and kept rounds, from the Connect calls
// of the same origin; the page itself holds no data.
//
// The modules, each with one job:
//   rpc.js     calls, streams, the tab's token
//   route.js   the view a URL's fragment names (thread, turn, event or round): deep links
//   units.js   bytes, counts, durations and times as a person reads them
//   dom.js     building nodes (server text only ever as text)
//   rounds.js  a thread's manifest events and their diffs: the model every count is drawn from
//   threads.js the threads pane; thread.js the thread pane (counts, turns); turn.js the turn pane
// This file wires them: sign-in, the URL -> view, and the thread's live watch.

import { RpcError, call, stream, token } from "./rpc.js";
import { byId } from "./dom.js";
import * as route from "./route.js";
import * as units from "./units.js";
import { ThreadRounds } from "./rounds.js";
import { ThreadList } from "./threads.js";
import { ThreadPane } from "./thread.js";
import { TurnPane } from "./turn.js";

const RECONNECT_MS = 1000;

const threads = new ThreadList();
const threadPane = new ThreadPane();
const turnPane = new TurnPane();

const app = {
  signedIn: false,
  thread: "",
  turn: "",
  rounds: null,
  watch: null,
  // A link named an event or a round not yet scrolled to.
  scrollPending: false,
};

function showError(error) {
  byId("error").textContent = error ? String(error.message || error) : "";
}
threads.onError = showError;
threadPane.turns.onError = showError;

// --- sign-in ---------------------------------------------------------------

function askForToken(message) {
  app.signedIn = false;
  byId("main").hidden = true;
  byId("sign-out").hidden = true;
  byId("token-form").hidden = false;
  byId("token-error").textContent = message || "";
  byId("token").focus();
}

async function start() {
  // Signed in again after a refusal: the view is built anew. The thread a link names is read
  // beside the thread list, not after it; the list's answer says whether the token is good.
  closeThread();
  const named = route.parse().thread;
  const opening = named ? openThread(named) : Promise.resolve();
  try {
    await threads.reload();
  } catch (error) {
    await opening;
    closeThread();
    showError(null);
    if (error.code === "unauthenticated") {
      askForToken(token.get() ? "That token was refused." : "");
      return;
    }
    showError(error);
    return;
  }
  app.signedIn = true;
  byId("token-form").hidden = true;
  byId("main").hidden = false;
  byId("sign-out").hidden = !token.get();
  await opening;
  threads.select(app.thread);
  // A thread the link names that is not there has said so (openThread): not asked for again.
  if (named && app.thread !== named) return;
  await show(route.parse());
}

byId("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = byId("token");
  token.set(input.value);
  input.value = "";
  start();
});

// Forgets the token (another one, another tenant's say, may sign in next) and what it showed.
byId("sign-out").addEventListener("click", () => {
  token.forget();
  closeThread();
  threads.clear();
  route.forget();
  askForToken("");
});

// --- the URL names the view --------------------------------------------------

// Links change the fragment; Back and Forward too. Each shows what the URL names.
window.addEventListener("hashchange", () => {
  if (app.signedIn) show(route.parse()).catch(showError);
});

// The thread pane deleted its thread: back to the list, which no longer holds it.
window.addEventListener("thread-deleted", () => {
  location.hash = "";
  threads.reload().catch(showError);
});

// The thread pane forked its thread: the list holds the copy, and the page shows it.
window.addEventListener("thread-forked", (event) => {
  location.hash = route.href({ thread: event.detail });
  threads.reload().catch(showError);
});

async function show(view) {
  showError(null);
  if (!view.thread) {
    closeThread();
    return;
  }
  if (view.thread !== app.thread) await openThread(view.thread);
  if (view.thread !== app.thread) return;
  app.scrollPending = Boolean(view.event || view.round || view.at);
  if (!view.turn) closeTurn();
  else if (view.turn !== app.turn) await openTurn(view.turn);
  else applyFocus();
}

function closeThread() {
  if (app.watch) app.watch.abort();
  app.watch = null;
  app.thread = "";
  app.rounds = null;
  closeTurn();
  threads.select("");
  threadPane.hide();
  setLive(false, "not watching");
}

function closeTurn() {
  app.turn = "";
  threadPane.turns.select("");
  turnPane.hide();
}

async function openThread(threadId) {
  closeThread();
  app.thread = threadId;
  app.rounds = new ThreadRounds(threadId);
  threads.select(threadId);
  threadPane.show(threadId);
  // The calls go out first; the empty counts are drawn while the server answers.
  const reading = Promise.all([threadPane.describe(threadId), threadPane.turns.load("")]);
  threadPane.renderCounts(app.rounds);
  try {
    const [thread] = await reading;
    if (thread) threads.update(thread);
  } catch (error) {
    if (app.thread !== threadId) return;
    closeThread();
    showError(error.code === "not_found" ? new Error(`No thread '${threadId}' here (${error.message}).`) : error);
    return;
  }
  if (app.thread === threadId) watch(threadId);
}

async function openTurn(turnId) {
  const threadId = app.thread;
  app.turn = turnId;
  turnPane.show(threadId, turnId, null);
  turnPane.renderManifests(app.rounds);
  if (app.rounds.caughtUp) renderTurnManifests(app.rounds).catch(showError);
  const found = await threadPane.turns.find(turnId);
  if (app.thread !== threadId || app.turn !== turnId) return;
  if (!found) {
    closeTurn();
    showError(new Error(`Thread '${threadId}' has no turn '${turnId}'.`));
    return;
  }
  threadPane.turns.select(turnId);
  turnPane.describe(threadPane.turns.info.get(turnId));
  turnPane.renderTimeline(threadPane.turnRounds(turnId));
  applyFocus();
  await turnPane.renderKept().catch(showError);
  applyFocus();
}

// Marks the event or round the URL names; scrolls to it once, when it first is on the page. Says so
// when the thread has been read and it is not there.
function applyFocus() {
  const view = route.parse();
  const turn = byId("turn");
  for (const old of document.querySelectorAll(".focused")) old.classList.remove("focused");
  if (view.thread !== app.thread || view.turn !== app.turn || !(view.event || view.round || view.at)) return;
  if (view.at) {
    // The round's mark on the axis and its row in the timeline are marked too.
    for (const found of byId("timeline").querySelectorAll(`[data-round="${CSS.escape(view.at)}"]`)) {
      found.closest("li")?.classList.add("focused");
      if (found.classList.contains("mark")) found.classList.add("focused");
    }
  }
  let selector = `[data-testid="kept-round"][data-round="${CSS.escape(view.round || "")}"]`;
  if (view.event) selector = `[data-testid="manifest-round"][data-event="${CSS.escape(view.event)}"]`;
  if (view.at) selector = `[data-testid="turn-round"][data-round="${CSS.escape(view.at)}"]`;
  const target = turn.querySelector(selector);
  if (target) {
    target.classList.add("focused");
    if (app.scrollPending) target.scrollIntoView({ block: "start" });
    app.scrollPending = false;
    return;
  }
  if (!app.scrollPending) return;
  if (view.event && app.rounds?.caughtUp) {
    showError(new Error(`Turn '${app.turn}' has no manifest event #${view.event}.`));
    app.scrollPending = false;
  } else if (view.at && threadPane.timeline) {
    showError(new Error(`Round ${view.at} of the timeline is not a round of turn '${app.turn}'.`));
    app.scrollPending = false;
  } else if (view.round && turnPane.keptShown) {
    showError(new Error(`Round ${view.round} of turn '${app.turn}' is not kept by this server (any more).`));
    app.scrollPending = false;
  }
}

// The open turn's manifest events with their diffs (asked for now, for these events only).
async function renderTurnManifests(rounds, freshEventId = "") {
  const turnId = app.turn;
  await rounds.fillDiffs(rounds.forTurn(turnId), call).catch(showError);
  if (app.rounds !== rounds || app.turn !== turnId) return;
  turnPane.renderManifests(rounds, freshEventId);
  applyFocus();
}

// --- live manifest events --------------------------------------------------

function setLive(on, text) {
  const badge = byId("live");
  badge.className = "live " + (on ? "on" : "off");
  badge.textContent = text;
}

function watch(threadId) {
  if (app.watch) app.watch.abort();
  const controller = new AbortController();
  app.watch = controller;
  const rounds = app.rounds;
  const run = async () => {
    while (!controller.signal.aborted && app.rounds === rounds) {
      try {
        await stream(
          "ManifestService",
          "WatchManifests",
          { threadId, afterEventId: rounds.lastEventId },
          () => setLive(true, "live"),
          (message) => onWatchMessage(rounds, message),
          controller.signal,
        );
      } catch (error) {
        if (controller.signal.aborted) return;
        if (error instanceof RpcError && error.code === "unauthenticated") {
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

async function onWatchMessage(rounds, message) {
  if (app.rounds !== rounds) return;
  if (message.heartbeat) {
    setLive(true, "live");
    if (!rounds.caughtUp) {
      // The first heartbeat follows the stored backlog: every event of the thread is here.
      rounds.caughtUp = true;
      threadPane.renderCounts(rounds);
      if (app.turn) await renderTurnManifests(rounds);
    }
    return;
  }
  const event = message.event;
  if (!event || !rounds.newer(event)) return;
  // The stored backlog is read without a diff per event (the model works the break out itself);
  // a live event's diff is asked for at once, to show what changed as it happens.
  const previous = rounds.caughtUp ? rounds.latest() : null;
  const diff = previous
    ? await call("ManifestService", "DiffManifests", { base: { eventId: previous.eventId }, target: { eventId: event.eventId } })
    : null;
  if (app.rounds !== rounds) return;
  rounds.add(event, diff);
  // The stored backlog is drawn once, at the heartbeat that follows it.
  if (!rounds.caughtUp) return;
  threadPane.renderCounts(rounds, event.turnId);
  if (rounds.caughtUp) {
    // A live round: the thread's and its turn's counts moved, or a turn began.
    const [thread] = await Promise.all([threadPane.describe(rounds.threadId), threadPane.turns.refresh()]).catch((error) => {
      showError(error);
      return [null];
    });
    if (app.rounds !== rounds) return;
    if (thread) threads.update(thread);
    if (event.turnId === app.turn) turnPane.describe(threadPane.turns.info.get(app.turn));
  }
  if (event.turnId === app.turn && rounds.caughtUp) {
    await renderTurnManifests(rounds, event.eventId);
    if (rounds.caughtUp) {
      await turnPane.renderKept(event.eventId).catch(showError);
      applyFocus();
    }
  }
}

byId("zone").textContent = `times in ${units.zoneName()}`;
start();
