// The threads pane: ListThreads a page at a time, each thread a link to its view.
//
// `query` is what ListThreads is asked besides paging: the search box sets its AIP-160 `filter`
// (one ListThreads call per search; the server filters, so a thread behind thousands of newer ones
// is found in one answer).

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
    const shown = this.list.children.length;
    status.textContent = filter ? `${shown}${this.pageToken ? "+" : ""} matching` : "";
    this.onError(null);
  }

  async reload() {
    this.pageToken = "";
    const page = await this.page();
    this.list.replaceChildren(...page);
  }

  async more() {
    this.list.append(...(await this.page()));
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
    const item = [...this.list.children].find((li) => li.dataset.thread === thread.threadId);
    if (item) item.replaceWith(this.item(thread));
  }

  select(threadId) {
    this.selected = threadId;
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
    this.list.replaceChildren();
    this.moreButton.hidden = true;
  }
}
