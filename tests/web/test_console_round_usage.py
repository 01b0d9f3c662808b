"""The console's rounds: per round the cache reads expected against those reported, the cost, and
the prefix break's cause, in Debian's Chromium against a live server."""

from __future__ import annotations

from pioneer_grpc.v1 import usage_pb2
from tests.web.agent_loop import THREAD, AgentLoop
from tests.web.browser import WAIT_MS, sign_in

TOKEN = "usage-token-7c2a"


async def test_the_rounds_show_expected_against_reported_the_cost_and_the_break(
    server_factory, browser, screenshots
):
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()  # turn 2's round follows SOUL.md edited: its prefix broke at soul_core
    assert loop.replies[-1].history_report.prefix_break.section_id == "soul_core"
    usage = usage_pb2.ProviderUsage(
        input_tokens=12_000, cache_read_input_tokens=9_000, cache_write_input_tokens=2_000, output_tokens=80
    )
    await loop.client.complete_turn(
        thread_id=THREAD, turn_id="turn-2", previous_round_usage=usage, metadata=loop.metadata
    )
    answer = await loop.client.list_round_usage(thread_id=THREAD, metadata=loop.metadata)
    [round_] = answer.rounds
    expected = round_.expected_cache_read_input_tokens

    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/")
    await sign_in(page, TOKEN)
    await page.locator(f'[data-testid="thread"][data-thread="{THREAD}"] a').click()
    rows = page.get_by_test_id("round-usage-row")
    # Every round the loop ran, newest first: turn 2's, reported, and turn 1's two, not reported.
    await expect(rows).to_have_count(3, timeout=WAIT_MS)
    for older in (rows.nth(1), rows.nth(2)):
        await expect(older.get_by_test_id("not-reported")).to_have_text(["not reported", "not reported"])
        await expect(older.get_by_test_id("expected-read")).to_have_text("–")
    row = rows.first
    await expect(row).to_have_attribute("data-event-id", str(loop.replies[-1].manifest_event_id))
    await expect(row).to_have_class("broke")
    await expect(row.get_by_test_id("reported-read")).to_have_text("9,000 (75%)")
    expected_share = round(100 * expected / round_.expected_input_tokens)
    await expect(row.get_by_test_id("expected-read")).to_have_text(f"{expected:,} ({expected_share}%)")
    # claude-sonnet-4-5 at $3 / $0.30 / $3.75 per million: 1,000 uncached, 9,000 read, 2,000 written.
    await expect(row.get_by_test_id("reported-cost")).to_have_text("$0.0132")
    await expect(row.get_by_test_id("expected-cost")).to_have_text(f"${round_.expected_input_cost_usd:.4f}")
    await expect(row.get_by_test_id("break-cause")).to_contain_text("section: soul_core")
    await expect(row.get_by_test_id("not-reported")).to_have_count(0)
    await page.screenshot(path=str(screenshots / "round-usage.png"), full_page=True)

    # The timeline: all three rounds, the first two without usage; the break's line names its
    # cause once, in its badge.
    timeline = page.get_by_test_id("timeline-round")
    await expect(timeline).to_have_count(3)
    await expect(page.get_by_test_id("timeline-summary")).to_contain_text("3 rounds")
    for number in (1, 2):
        await expect(timeline.nth(number - 1).get_by_test_id("not-reported")).to_have_text(
            "usage not reported"
        )
    broke = timeline.nth(2)
    await expect(broke).to_have_attribute("data-cause", "section")
    await expect(broke.get_by_test_id("not-reported")).to_have_count(0)
    await expect(broke.get_by_test_id("break-detail")).to_have_text("soul_core")
    await broke.locator("a").click()
    line = page.locator('[data-testid="turn-round"][data-round="3"]').get_by_test_id("round-break")
    await expect(line).to_have_text("section soul_core", timeout=WAIT_MS)
    earlier = page.locator('[data-testid="turn-round"]')
    await expect(earlier).to_have_count(1)
    await page.locator('[data-turn="turn-1"] a').first.click()
    first = page.locator('[data-testid="turn-round"][data-round="1"]')
    await expect(first.get_by_test_id("not-reported")).to_have_text(" · usage not reported", timeout=WAIT_MS)
    await page.screenshot(path=str(screenshots / "round-usage-not-reported.png"), full_page=True)
