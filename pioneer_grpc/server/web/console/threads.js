// The threads pane: ListThreads a page at a time, each thread a link to its view.
//
// `query` is what ListThreads is asked besides paging: the search box sets its AIP-160 `filter`
// (one ListThreads call per search; the server filters, so a thread behind thousands of newer ones
// is found in one answer).
//
// The open thread is always in the list, selected: when the pages read so far do not hold it (a
// link to a thread behind the first page), it is pinned first until a page brings it to its place.

import { call } from "./rpc.js";
import { byId, el, timeEl } from "./dom.js";
import * as route from "./route.js";
import * as units from "./units.js";

const PAGE = 50;

export class ThreadList {
  constructor() {
    this.list = byId("threads");
    this.moreButton = byId("more-threads");
    this.query = { orderBy: "create_time desc" };
    this.pageToken = "";
    this.selected = "";
    // The selected thread as last read (GetThread), to pin when no page holds it.
    this.selectedThread = null;
    this.onError = () => {};
    this.moreButton.addEventListener("click", () => this.more().catch((error) => this.onError(error)));
    byId("thread-search-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.search(byId("thread-search").value.trim()).catch((error) => this.onError(error));
    });
  }

  async search(filter) {
    const status = byId("thread-search-status");
    this.query = { ...this.query, filter };
    try {
      await this.reload();
    } catch (error) {
      status.textContent = "";
      throw error;
    }
    const shown = this.items().filter((li) => !li.classList.contains("pinned")).length;
    status.textContent = filter ? `${shown}${this.pageToken ? "+" : ""} matching` : "";
    this.onError(null);
  }

  items() {
    return [...this.list.children];
  }

  async reload() {
    this.pageToken = "";
    const page = await this.page();
    this.list.replaceChildren(...page);
    this.pin();
  }

  async more() {
    const page = await this.page();
    const ids = new Set(page.map((li) => li.dataset.thread));
    // A pinned thread the page holds goes to its place.
    for (const li of this.items()) if (li.classList.contains("pinned") && ids.has(li.dataset.thread)) li.remove();
    this.list.append(...page);
  }

  // The selected thread first in the list, when no item holds it and it has been read.
  pin() {
    const thread = this.selectedThread;
    if (!thread || thread.threadId !== this.selected) return;
    if (this.items().some((li) => li.dataset.thread === thread.threadId)) return;
    const item = this.item(thread);
    item.classList.add("pinned");
    item.title = "The open thread: not on the pages of the list read so far";
    this.list.prepend(item);
  }

  async page() {
    const answer = await call("HistoryService", "ListThreads", { ...this.query, pageSize: PAGE, pageToken: this.pageToken });
    this.pageToken = answer.nextPageToken || "";
    this.moreButton.hidden = !this.pageToken;
    return (answer.threads || []).map((thread) => this.item(thread));
  }

  item(thread) {
    const id = thread.threadId;
    return el(
      "li",
      { class: "pick" + (id === this.selected ? " selected" : ""), "data-thread": id, "data-testid": "thread" },
      el(
        "a",
        { href: route.href({ thread: id }) },
        el("span", { class: "name" }, id),
        el(
          "span",
          { class: "meta" },
          thread.config?.model ? `${thread.config.model} · ` : "",
          `${units.counted(thread.entryCount, "entry", "entries")} · updated `,
          timeEl(thread.updateTime || thread.createTime, { ms: false, zone: false }),
        ),
      ),
    );
  }

  // A thread read again (GetThread): its item shows the same counts as its pane.
  update(thread) {
    if (thread.threadId === this.selected) this.selectedThread = thread;
    const item = this.items().find((li) => li.dataset.thread === thread.threadId);
    if (!item) {
      this.pin();
      return;
    }
    const fresh = this.item(thread);
    if (item.classList.contains("pinned")) {
      fresh.classList.add("pinned");
      fresh.title = item.title;
    }
    item.replaceWith(fresh);
  }

  select(threadId) {
    this.selected = threadId;
    if (this.selectedThread?.threadId !== threadId) this.selectedThread = null;
    for (const li of this.items()) if (li.classList.contains("pinned") && li.dataset.thread !== threadId) li.remove();
    this.pin();
    let picked = null;
    for (const item of this.list.children) {
      item.classList.remove("selected");
      if (item.dataset.thread === threadId) picked = item;
    }
    if (!picked) return;
    // Scrolled to while in the list's flow: once selected it sticks to an edge, always "in view".
    picked.scrollIntoView({ block: "nearest" });
    picked.classList.add("selected");
  }

  clear() {
    this.selected = "";
    this.selectedThread = null;
    this.list.replaceChildren();
    this.moreButton.hidden = true;
  }
}
