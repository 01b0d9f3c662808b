"""The console as a developer uses it to debug a thread, in Debian's Chromium against a live server.

Deep links: every view the page shows (a thread, a turn, a manifest event, a kept round) is in its
URL as it is clicked, never with the token, and the URL pasted into a new browser opens the same
view after signing in; Back and Forward walk the views. Sticky panes: scrolling a list or a long
turn moves nothing else, and the selected thread and turn stay in sight. Units: bytes in KiB/MiB,
counts with separators, durations in their unit, times with milliseconds and the browser's zone.
Counts: each label says what it counts, and the same count reads the same everywhere. A closed tab:
one DEBUG line on the server, nothing louder.
"""

from __future__ import annotations

import datetime
import logging
import math
import re
from urllib.parse import parse_qs, urlsplit

import httpx

from pioneer_grpc.v1 import history_pb2
from tests.support import eventually
from tests.web.agent_loop import THREAD, AgentLoop
from tests.web.browser import WAIT_MS, sign_in
from tests.web.rounds import prepare_request

TOKEN = "views-token-5e1f"
WATCH = "/pioneer.v1.ManifestService/WatchManifests"


def _view(url: str) -> dict[str, str]:
    """The view a console URL names: its fragment's fields."""
    return {key: values[0] for key, values in parse_qs(urlsplit(url).fragment).items()}


async def _rounds(handle, turn_id: str) -> dict:
    """ListRenderedRounds over HTTP/JSON, as the page reads it."""
    async with httpx.AsyncClient() as client:
        answer = await client.post(
            f"http://{handle.running.http_address}/pioneer.v1.ManifestService/ListRenderedRounds",
            json={"threadId": THREAD, "turnId": turn_id},
            headers={"authorization": f"Bearer {handle.token}"} if handle.token else {},
        )
    answer.raise_for_status()
    return answer.json()


async def _within(locator, container) -> bool:
    """Whether `locator` is drawn wholly inside `container`'s box (in sight, not scrolled away)."""
    inner, outer = await locator.bounding_box(), await container.bounding_box()
    assert inner and outer
    return (
        inner["y"] >= outer["y"] - 1
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1
        and inner["x"] >= outer["x"] - 1
    )


async def test_deep_links_open_the_same_thread_turn_and_round_in_a_new_browser(
    server_factory, open_browser, screenshots
):
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN, keep_rendered_requests=True)
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    live = await loop.live_round()
    start = f"http://{handle.running.http_address}/"

    first = await open_browser()
    page = await first.new_page()
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    await page.goto(start)
    await sign_in(page, TOKEN)

    await page.locator(f'[data-testid="thread"][data-thread="{THREAD}"] a').click()
    await expect(page.get_by_test_id("thread-title")).to_have_text(THREAD, timeout=WAIT_MS)
    assert _view(page.url) == {"thread": THREAD}
    await page.locator('[data-testid="turn-item"][data-turn="turn-2"] a').click()
    await expect(page.get_by_test_id("turn-title")).to_have_text("turn-2", timeout=WAIT_MS)
    assert _view(page.url) == {"thread": THREAD, "turn": "turn-2"}

    # A kept round's link, then a manifest event's.
    round_2 = page.locator('[data-testid="kept-round"][data-round="2"]')
    await round_2.locator("a.anchor").click()
    assert _view(page.url) == {"thread": THREAD, "turn": "turn-2", "round": "2"}
    await expect(round_2).to_have_class(re.compile(r"\bfocused\b"))
    round_url = page.url
    event = str(live.manifest_event_id)
    manifest = page.locator(f'[data-testid="manifest-round"][data-event="{event}"]')
    await manifest.locator("a.anchor").click()
    assert _view(page.url) == {"thread": THREAD, "turn": "turn-2", "event": event}
    await expect(manifest).to_have_class(re.compile(r"\bfocused\b"))
    await expect(round_2).not_to_have_class(re.compile(r"\bfocused\b"))
    event_url = page.url
    await page.screenshot(path=str(screenshots / "links-1-clicked.png"))

    # Back and Forward walk the views.
    await page.go_back()
    assert page.url == round_url
    await expect(round_2).to_have_class(re.compile(r"\bfocused\b"))
    await page.go_back()
    await page.go_back()
    assert _view(page.url) == {"thread": THREAD}
    await expect(page.get_by_test_id("turn")).to_be_hidden()
    await expect(page.get_by_test_id("thread-title")).to_have_text(THREAD)
    await page.go_forward()
    await expect(page.get_by_test_id("turn-title")).to_have_text("turn-2", timeout=WAIT_MS)

    # The token is in no URL the page showed or asked for.
    assert urls and not any(TOKEN in url for url in [*urls, round_url, event_url])

    # A new browser: no session, so it asks for the token, then opens what the link names.
    for url, selector in (
        (round_url, '[data-testid="kept-round"][data-round="2"]'),
        (event_url, f'[data-testid="manifest-round"][data-event="{event}"]'),
    ):
        other = await (await open_browser(timezone_id="America/Los_Angeles")).new_page()
        await other.goto(url)
        await sign_in(other, TOKEN)
        await expect(other.get_by_test_id("thread-title")).to_have_text(THREAD, timeout=WAIT_MS)
        await expect(other.get_by_test_id("turn-title")).to_have_text("turn-2", timeout=WAIT_MS)
        target = other.locator(selector)
        await expect(target).to_have_class(re.compile(r"\bfocused\b"), timeout=WAIT_MS)
        await expect(other.locator('[data-testid="thread"].selected')).to_have_attribute(
            "data-thread", THREAD
        )
        await expect(other.locator('[data-testid="turn-item"].selected')).to_have_attribute(
            "data-turn", "turn-2"
        )
        # Scrolled into the turn pane's sight.
        head = await other.locator("#turn .pane-head").bounding_box()
        box = await target.bounding_box()
        assert head and box
        assert box["y"] >= head["y"] + head["height"] - 2
        assert await _within(target.locator("h4").first, other.get_by_test_id("turn-pane"))
        assert other.url == url
        await other.screenshot(path=str(screenshots / f"links-2-opened-{_view(url).popitem()[0]}.png"))

    # A link to what is not there says so.
    gone = await (await open_browser()).new_page()
    await gone.goto(start + f"#thread={THREAD}&turn=turn-2&round=9")
    await sign_in(gone, TOKEN)
    await expect(gone.get_by_test_id("error")).to_have_text(
        "Round 9 of turn 'turn-2' is not kept by this server (any more).", timeout=WAIT_MS
    )
    await gone.goto(start + "#thread=no-such-thread")
    await expect(gone.get_by_test_id("error")).to_contain_text(
        "No thread 'no-such-thread' here", timeout=WAIT_MS
    )
    await expect(gone.get_by_test_id("thread")).to_have_count(1)


async def test_panes_scroll_on_their_own_and_the_selection_stays_in_sight(
    server_factory, browser, screenshots
):
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0", keep_rendered_requests=True)
    client = await handle.client()
    # Older threads first, so the thread under test is the newest, at the top of a long list.
    for number in range(70):
        await client.create_thread(
            thread_id=f"older-{number:02d}", config=history_pb2.ThreadConfig(model="gpt-4o")
        )
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    await loop.live_round()

    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/#thread={THREAD}&turn=turn-2")
    await expect(page.get_by_test_id("kept-round")).to_have_count(2, timeout=WAIT_MS)
    threads_pane = page.get_by_test_id("threads-pane")
    selected = page.locator('[data-testid="thread"].selected')
    await expect(selected).to_have_attribute("data-thread", THREAD)
    threads_box = await threads_pane.bounding_box()
    thread_box = await page.get_by_test_id("thread-pane").bounding_box()

    # The list scrolled to its end: the selected thread (first in it) stays at the pane's edge.
    await page.locator("#threads-pane .pane-body").evaluate("body => { body.scrollTop = body.scrollHeight; }")
    assert await page.locator("#threads-pane .pane-body").evaluate("body => body.scrollTop") > 500
    assert await _within(selected, page.locator("#threads-pane .pane-body"))
    await page.screenshot(path=str(screenshots / "sticky-1-threads-scrolled.png"))

    # The turn pane scrolled to its end: its title stays, the other panes and the page do not move.
    turn_pane = page.get_by_test_id("turn-pane")
    await turn_pane.evaluate("pane => { pane.scrollTop = pane.scrollHeight; }")
    assert await turn_pane.evaluate("pane => pane.scrollTop") > 200
    assert await page.evaluate("window.scrollY") == 0
    assert await _within(page.get_by_test_id("turn-title"), turn_pane)
    assert await threads_pane.bounding_box() == threads_box
    assert await page.get_by_test_id("thread-pane").bounding_box() == thread_box
    assert await _within(
        page.locator('[data-testid="turn-item"].selected'), page.get_by_test_id("thread-pane")
    )
    assert await _within(selected, page.locator("#threads-pane .pane-body"))
    await page.screenshot(path=str(screenshots / "sticky-2-turn-scrolled.png"))


def _human_bytes(value: int) -> str:
    size, unit = float(value), 0
    units = ["B", "KiB", "MiB", "GiB"]
    while size >= 1024 and unit < len(units) - 1:
        size, unit = size / 1024, unit + 1
    shown = round(size) if unit == 0 or size >= 10 else round(size * 10) / 10
    return f"{shown:g} {units[unit]}"


def _local(timestamp: str, zone: datetime.timezone, label: str) -> str:
    moment = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(zone)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d} {label}"


async def test_units_bytes_counts_durations_and_times_as_a_person_reads_them(
    server_factory, open_browser, screenshots
):
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0", keep_rendered_requests=True)
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    await loop.live_round()
    report = loop.replies[-1].history_report
    kept = await _rounds(handle, "turn-2")

    browser = await open_browser(timezone_id="Asia/Kolkata")
    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/#thread={THREAD}&turn=turn-2")
    rounds = page.get_by_test_id("kept-round")
    await expect(rounds).to_have_count(2, timeout=WAIT_MS)
    await expect(page.get_by_test_id("zone")).to_contain_text("(UTC+05:30)")

    # The server's bounds: 64 MiB and a day, not 67108864 and 86400.
    await expect(page.get_by_test_id("kept-bounds")).to_have_text(
        "Kept by this server: the newest 50 rounds of each thread, 64 MiB in all, each for 24 h. "
        "Rounds of this turn kept: 2."
    )
    zone = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    for number, answer in enumerate(kept["rounds"]):
        header = rounds.nth(number).locator("h4").first
        kept_bytes = int(answer["keptBytes"])
        assert kept_bytes > 1024
        await expect(header.locator(".bytes")).to_have_text(_human_bytes(kept_bytes))
        await expect(header.locator(".bytes")).to_have_attribute("title", f"{kept_bytes:,} bytes")
        await expect(header.locator("time")).to_have_text(_local(answer["createTime"], zone, "UTC+05:30"))
    decision = rounds.nth(1).get_by_test_id("decision")
    assert report.budget_tokens >= 1000
    assert report.low_water_tokens > 0
    await expect(decision.locator('[data-field="budget"]')).to_have_text(
        f"{report.budget_tokens:,} tokens (threshold {report.threshold_tokens:,}, "
        f"low water {report.low_water_tokens:,})"
    )

    # A manifest event's time and the time since the event before it.
    events = page.get_by_test_id("manifest-round")
    await expect(events).to_have_count(2)
    first = await events.nth(0).locator("h4 time").first.get_attribute("datetime")
    second = await events.nth(1).locator("h4 time").first.get_attribute("datetime")
    assert first and second
    await expect(events.nth(1).locator("h4 time").first).to_have_text(_local(second, zone, "UTC+05:30"))
    gap = datetime.datetime.fromisoformat(second.replace("Z", "+00:00")) - datetime.datetime.fromisoformat(
        first.replace("Z", "+00:00")
    )
    gap_ms = gap / datetime.timedelta(milliseconds=1)
    # Half a millisecond rounds up, as the page's Math.round does.
    expected_gap = f"{math.floor(gap_ms + 0.5)} ms" if gap_ms < 1000 else f"{gap_ms / 1000:.2f} s"
    previous = await events.nth(0).get_attribute("data-event")
    await expect(events.nth(1).get_by_test_id("after-previous")).to_have_text(
        f" · {expected_gap} after #{previous}"
    )
    await page.screenshot(path=str(screenshots / "units-1-turn.png"))

    # The rules themselves, at their edges.
    shown = await page.evaluate(
        """import('/units.js').then((u) => [
            u.bytes(0), u.bytes(1023), u.bytes(1024), u.bytes(1536), u.bytes(10 * 1024 * 1024 + 1),
            u.bytes('67108864'), u.count(1234567), u.count('9007199254740'), u.counted(1, 'entry', 'entries'),
            u.counted(2, 'entry', 'entries'), u.duration(0), u.duration(850), u.duration(2345),
            u.duration(9_999), u.duration(59_999), u.duration(245_000),
            u.seconds(86400), u.seconds(5400), u.seconds(3 * 86400),
            u.between('2026-12-07T12:00:00.000400Z', '2026-12-07T12:00:00.009Z'),
            u.between('2026-12-07T12:00:59Z', '2026-12-07T12:01:00.5Z'),
        ])"""
    )
    assert shown == [
        "0 B", "1023 B", "1 KiB", "1.5 KiB", "10 MiB",
        "64 MiB", "1,234,567", "9,007,199,254,740", "1 entry",
        "2 entries", "0 ms", "850 ms", "2.35 s", "10.0 s",
        "1 min 00 s", "4 min 05 s", "24 h", "1 h 30 min", "3 d",
        8.6, 1500,
    ]  # fmt: skip


async def test_each_count_says_what_it_counts_and_reads_the_same_everywhere(
    server_factory, browser, screenshots
):
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0", keep_rendered_requests=True)
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/#thread={THREAD}&turn=turn-2")
    await expect(page.get_by_test_id("kept-round")).to_have_count(1, timeout=WAIT_MS)
    headings = page.get_by_test_id("counts").locator("th")
    await expect(headings).to_have_text(["manifest events", "section breaks", "by section"])
    # Three rounds (turn 1's two, turn 2's first) recorded two manifest events: turn 1's tool round
    # compiled the same prompt as its first round.
    assert len(loop.replies) == 3
    assert loop.replies[0].manifest_event_id == loop.replies[1].manifest_event_id
    await expect(page.get_by_test_id("events-count")).to_have_text("2")
    await expect(page.get_by_test_id("breaks-count")).to_have_text("1")
    await expect(page.locator("#manifest-rounds h3")).to_have_text("Manifest events of this turn (1)")
    await expect(page.get_by_test_id("kept-bounds")).to_contain_text("Rounds of this turn kept: 1.")

    # A section's characters: the manifest's table and the kept prompt count the same thing.
    chars = page.locator('[data-testid="manifest-round"] tr[data-section="soul_core"] td.num')
    await expect(
        page.locator('[data-testid="prompt-section"][data-section="soul_core"] summary')
    ).to_contain_text(f"soul_core · {await chars.inner_text()} chars rendered")

    # Entries: the list, the thread's pane and GetThread agree, and stay so as a live round adds two.
    async def entries_everywhere(count: int) -> None:
        thread = (await (await handle.client()).get_thread(thread_id=THREAD)).thread
        assert thread.entry_count == count
        await expect(page.locator(f'[data-testid="thread"][data-thread="{THREAD}"] .meta')).to_contain_text(
            f"{count} entries", timeout=WAIT_MS
        )
        await expect(page.locator('#thread-meta [data-field="entries"]')).to_have_text(
            f"{count} stored entries", timeout=WAIT_MS
        )

    await entries_everywhere(5)
    await expect(page.locator('#turn-meta [data-field="entries"]')).to_have_text("1 stored entry")
    await loop.live_round()
    await entries_everywhere(7)
    await expect(page.locator('#turn-meta [data-field="entries"]')).to_have_text("3 stored entries")
    await expect(page.locator('[data-testid="turn-item"][data-turn="turn-2"] .meta')).to_contain_text(
        "3 entries"
    )
    await expect(page.get_by_test_id("events-count")).to_have_text("3")
    await expect(page.locator("#manifest-rounds h3")).to_have_text("Manifest events of this turn (2)")
    await page.screenshot(path=str(screenshots / "counts-1-live.png"))


async def test_a_closed_tab_leaves_one_debug_line(server_factory, browser, screenshots, caplog):
    from playwright.async_api import expect

    caplog.set_level(logging.DEBUG)
    handle = await server_factory(http_listen="127.0.0.1:0")
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    for name in ("aiosqlite", "sqlalchemy"):  # drivers' own chatter, at DEBUG
        logging.getLogger(name).setLevel(logging.WARNING)
    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/#thread={THREAD}&turn=turn-2")
    await expect(page.get_by_test_id("not-kept")).to_be_visible(timeout=WAIT_MS)
    await expect(page.get_by_test_id("live")).to_have_text("live")
    await expect(page.get_by_test_id("manifest-round")).to_have_count(1)
    await page.screenshot(path=str(screenshots / "closed-1-before.png"))

    since = len(caplog.records)
    await page.close()
    await eventually(
        lambda: any(WATCH in r.getMessage() for r in caplog.records[since:]),
        within=WAIT_MS / 1000,
        what="the watch's access line",
    )
    lines = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records[since:]]
    assert len(lines) == 1, lines
    assert re.fullmatch(
        rf"DEBUG pioneer_grpc\.access: rpc {WATCH} code=CANCELLED duration_ms=\d+\.\d protocol=connect",
        lines[0],
    ), lines


async def test_a_link_to_a_turn_past_the_first_page_of_turns_opens_it(server_factory, browser, screenshots):
    """Turns are listed oldest first, 100 a page: a thread's newest turns, the ones a link most often
    names, are on its last page."""
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0")
    client = await handle.client()
    await client.create_thread(thread_id="long", config=history_pb2.ThreadConfig(model="claude-sonnet-4-5"))
    for number in range(105):
        turn = f"t{number:03d}"
        await client.prepare_turn(prepare_request("long", turn, "hello"))
        await client.complete_turn(thread_id="long", turn_id=turn)
    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/#thread=long&turn=t103")
    await expect(page.get_by_test_id("turn-title")).to_have_text("t103", timeout=WAIT_MS)
    selected = page.locator('[data-testid="turn-item"].selected')
    await expect(selected).to_have_attribute("data-turn", "t103", timeout=WAIT_MS)
    await expect(page.get_by_test_id("turn-item")).to_have_count(105)
    await expect(page.get_by_test_id("manifest-round")).to_have_count(1, timeout=WAIT_MS)
    await expect(page.get_by_test_id("events-count")).to_have_text("105")
    # Scrolled to in the list's flow, not only stuck to its edge: the turn before it is in sight too.
    turns = page.locator("#thread .pane-body")
    assert await _within(selected, turns)
    assert await _within(page.locator('[data-testid="turn-item"][data-turn="t102"]'), turns)
    await page.screenshot(path=str(screenshots / "links-3-turn-on-page-2.png"))
