"""The console at production scale, in Debian's Chromium: a server with 2,000 threads, one of them
1,000 turns long with 20 prefix breaks of mixed causes (tests/web/seeded.py).

Search finds the thread in one ListThreads; opening it takes a handful of requests (its timeline is
one call, not a DiffManifests per event); the timeline marks the 20 breaks with their causes and
each mark jumps to its round; a section break shows the line that changed; a history break names the
entries it summarized, cleared or dropped; a deep link pasted into a new browser opens the same round.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from pioneer_grpc.v1 import history_pb2
from tests.web.browser import WAIT_MS, sign_in
from tests.web.seeded import BREAKS, LONG_THREAD, seed_console, soul

TOKEN = "scale-token-3b9d"
H = history_pb2
# A round's facts in the turn pane: when it was reported, its manifest event, its history decision.
ROUND_FACTS = re.compile(r"\d{4}-\d\d-\d\d [\d:.]+ UTC[-+\d:]* · manifest event #\d+ · (full|summarized)")


def _cause(value: int) -> str:
    return H.PrefixBreakCause.Name(value).removeprefix("PREFIX_BREAK_CAUSE_").lower().replace("_", " ")


def _rpc(url: str) -> str:
    return urlsplit(url).path.rsplit("/", 1)[-1]


async def test_a_long_thread_among_thousands_is_found_opened_and_its_breaks_shown(
    server_factory, open_browser, screenshots
):
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
    seeded = await seed_console(handle.ctx.store.engine)
    base = f"http://{handle.running.http_address}/"
    browser = await open_browser()
    page = await browser.new_page()
    calls: list[str] = []
    page.on(
        "request", lambda request: calls.append(_rpc(request.url)) if "/pioneer.v1." in request.url else None
    )
    await page.goto(base)
    await sign_in(page, TOKEN)
    await expect(page.get_by_test_id("thread")).to_have_count(50, timeout=WAIT_MS)
    await page.screenshot(path=str(screenshots / "scale-1-threads.png"))

    # Search: one ListThreads finds the thread behind a thousand newer ones.
    calls.clear()
    await page.get_by_test_id("thread-search").fill("incident-7731")
    await page.get_by_test_id("thread-search").press("Enter")
    found = page.get_by_test_id("thread")
    await expect(found).to_have_count(1, timeout=WAIT_MS)
    await expect(found).to_have_attribute("data-thread", LONG_THREAD)
    assert calls == ["ListThreads"]
    await page.screenshot(path=str(screenshots / "scale-2-search.png"))

    # Opening it: a handful of requests, the timeline one of them.
    calls.clear()
    await found.locator("a").click()
    marks = page.get_by_test_id("timeline-break")
    await expect(marks).to_have_count(20, timeout=WAIT_MS)
    await expect(page.get_by_test_id("turn-item")).to_have_count(seeded.turns, timeout=WAIT_MS)
    await expect(page.get_by_test_id("timeline-breaks")).to_have_text("20 breaks")
    assert sorted(calls) == sorted(["GetThread", "ListTurns", "ListThreadTimeline", "WatchManifests"]), calls
    causes = [await marks.nth(i).get_attribute("data-cause") for i in range(20)]
    assert causes == [_cause(cause) for _, cause in BREAKS]
    assert {"section", "summary", "clearing", "turn cap", "tools", "model"} <= set(causes)
    await page.screenshot(path=str(screenshots / "scale-3-timeline.png"))

    # Breaks only: the 20 rounds, each with its cause; then every round again.
    rounds = page.get_by_test_id("timeline-round")
    await expect(rounds).to_have_count(seeded.turns)
    await page.get_by_test_id("breaks-only").check()
    await expect(rounds).to_have_count(20)
    summary = rounds.filter(has_text="summary").first
    await expect(summary.get_by_test_id("break-detail")).to_contain_text(
        "100 entries summarized: e-0020, e-0021"
    )
    await page.screenshot(path=str(screenshots / "scale-4-breaks-only.png"))

    # Each mark jumps to its round: the URL names it, the turn pane shows it with its cause.
    for index, (turn, cause) in enumerate(BREAKS):
        await marks.nth(index).click()
        await expect(page.get_by_test_id("turn-title")).to_have_text(f"turn-{turn:04d}", timeout=WAIT_MS)
        view = {k: v[0] for k, v in parse_qs(urlsplit(page.url).fragment).items()}
        assert view == {"thread": LONG_THREAD, "turn": f"turn-{turn:04d}", "at": str(turn)}
        shown = page.locator(f'[data-testid="turn-round"][data-round="{turn}"]')
        await expect(shown).to_have_attribute("data-cause", _cause(cause))
        await expect(shown).to_have_class("round tl-round broke focused")
        # Its lines: the round, then when and which event (no line begins with a separator).
        lines = [line.strip() for line in (await shown.inner_text()).splitlines() if line.strip()]
        assert lines[0] == f"Round {turn}", lines
        assert ROUND_FACTS.fullmatch(lines[1]), lines
        assert not any(line.startswith("·") for line in lines), lines

    # A section break shows the line that changed, from the texts the server keeps.
    section_turn = BREAKS[-1][0]
    await marks.nth(len(BREAKS) - 1).click()
    await expect(page.get_by_test_id("turn-title")).to_have_text(f"turn-{section_turn:04d}", timeout=WAIT_MS)
    change = page.locator('[data-testid="change"][data-section="soul_core"]')
    await expect(change.get_by_test_id("removed-line")).to_have_text(
        f"- {soul(5).splitlines()[2]}", timeout=WAIT_MS
    )
    await expect(change.get_by_test_id("added-line")).to_have_text(f"+ {soul(6).splitlines()[2]}")
    await change.scroll_into_view_if_needed()
    await page.screenshot(path=str(screenshots / "scale-5-section-break.png"))

    # A deep link pasted into a new browser opens the same round once signed in.
    link = page.url
    other = await (await open_browser()).new_page()
    await other.goto(link)
    await sign_in(other, TOKEN)
    await expect(other.get_by_test_id("turn-title")).to_have_text(f"turn-{section_turn:04d}", timeout=WAIT_MS)
    again = other.locator(f'[data-testid="turn-round"][data-round="{section_turn}"]')
    await expect(again).to_have_class("round tl-round broke focused", timeout=WAIT_MS)
    await expect(other.locator(f'[data-testid="timeline-break"][data-round="{section_turn}"]')).to_have_class(
        "mark cause-section focused"
    )
    # Shot once the page has read the thread's events and drawn the round's line diff.
    await expect(other.get_by_text("reading the thread's events")).to_have_count(0, timeout=WAIT_MS)
    shown_change = other.locator('[data-testid="change"][data-section="soul_core"]')
    await expect(shown_change.get_by_test_id("added-line")).to_have_text(
        f"+ {soul(6).splitlines()[2]}", timeout=WAIT_MS
    )
    await expect(other.get_by_test_id("live")).to_have_text("live")
    # The linked thread, behind the list's first page, is in the list and shown selected.
    listed = other.locator(f'[data-testid="thread"][data-thread="{LONG_THREAD}"]')
    await expect(listed).to_have_count(1)
    await expect(listed).to_have_class(re.compile(r"\bselected\b"))
    await expect(listed).to_be_in_viewport()
    # The linked turn was scrolled to exactly: in its place right under the turn before it, not
    # stuck to the list's edge over other turns.
    picked = await other.locator(f'[data-turn="turn-{section_turn:04d}"]').bounding_box()
    before = await other.locator(f'[data-turn="turn-{section_turn - 1:04d}"]').bounding_box()
    assert picked and before and abs(before["y"] + before["height"] - picked["y"]) < 1, (before, picked)
    await other.screenshot(path=str(screenshots / "scale-6-deep-link.png"))
