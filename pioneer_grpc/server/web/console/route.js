// The view a URL names: a thread, one of its turns, and in that turn one manifest event, one kept
// round, or one round of the thread's timeline (at=N, its place in the timeline). It lives in the fragment (#thread=…&turn=…&event=…), so it never reaches the server; it
// names only what the page shows, never the token. Links are plain <a href> to these fragments:
// clicking one adds a history entry, Back and Forward walk them, and a link pasted into another
// browser opens the same view once it is signed in.

const DIGITS = /^[0-9]+$/;

export function parse(hash = location.hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const thread = params.get("thread") || "";
  const turn = params.get("turn") || "";
  if (!thread) return {};
  if (!turn) return { thread };
  const event = params.get("event") || "";
  const round = params.get("round") || "";
  const at = params.get("at") || "";
  if (DIGITS.test(event)) return { thread, turn, event };
  if (DIGITS.test(round)) return { thread, turn, round };
  if (DIGITS.test(at)) return { thread, turn, at };
  return { thread, turn };
}

export function href(view) {
  const params = new URLSearchParams();
  for (const key of ["thread", "turn", "event", "round", "at"]) {
    if (view[key]) params.set(key, String(view[key]));
  }
  const text = params.toString();
  return text ? "#" + text : location.pathname;
}

// The URL without a view (after signing out: the page forgets what it showed).
export function forget() {
  history.replaceState(null, "", location.pathname);
}
