"""The console in a real browser (Debian's Chromium, driven by Playwright), against a live server.

The server runs a two-turn agent loop (a tool round, then SOUL.md edited) and
the test looks at what a person would: the thread listed, turn 2's cache break
on soul_core highlighted, the history decision with its token counts, and a new
round appearing while the page stays open. A screenshot of each view is saved
under the test's tmp path, or under $PIONEER_CONSOLE_SCREENSHOTS when set.
"""

from __future__ import annotations

import socket

import grpc

from pioneer_grpc.config import Config
from pioneer_grpc.server.app import start_server
from pioneer_grpc.v1 import history_pb2
from tests.web.agent_loop import THREAD, AgentLoop
from tests.web.browser import WAIT_MS

TOKEN = "console-token"


async def test_console_shows_threads_cache_breaks_decisions_and_live_rounds(
    server_factory, browser, screenshots
):
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN, keep_rendered_requests=True)
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    turn_2_report = loop.replies[-1].history_report
    assert turn_2_report.decision == history_pb2.HISTORY_DECISION_FULL

    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/")
    # Nothing without the token: the page asks for it.
    await expect(page.get_by_test_id("token-form")).to_be_visible(timeout=WAIT_MS)
    await expect(page.get_by_test_id("threads")).to_be_hidden()
    await page.get_by_test_id("token-input").fill(TOKEN)
    await page.get_by_test_id("token-submit").click()

    thread = page.locator(f'[data-testid="thread"][data-thread="{THREAD}"]')
    await expect(thread).to_be_visible(timeout=WAIT_MS)
    await page.screenshot(path=str(screenshots / "1-threads.png"), full_page=True)

    await thread.click()
    # The thread's counts: three rounds so far but two manifest events (turn 1's tool round compiled
    # the same prompt as its first round and recorded none), one break, on soul_core.
    await expect(page.get_by_test_id("events-count")).to_have_text("2", timeout=WAIT_MS)
    await expect(page.get_by_test_id("breaks-count")).to_have_text("1")
    await expect(page.get_by_test_id("breaks-by-section")).to_have_text("soul_core ×1")
    await expect(page.locator('[data-testid="turn-item"]')).to_have_count(2)
    # The turn whose manifest broke the cache is marked in the list, with the section.
    await expect(page.get_by_test_id("turn-break")).to_have_count(1)
    await expect(
        page.locator('[data-testid="turn-item"][data-turn="turn-2"]').get_by_test_id("turn-break")
    ).to_have_text("break: soul_core")
    await page.screenshot(path=str(screenshots / "2-thread.png"), full_page=True)

    await page.locator('[data-testid="turn-item"][data-turn="turn-2"]').click()
    rounds = page.get_by_test_id("manifest-round")
    await expect(rounds).to_have_count(1, timeout=WAIT_MS)
    await expect(rounds.first.get_by_test_id("cache-break")).to_have_text("cache break at soul_core")
    highlighted = rounds.first.locator('tr[data-break="true"]')
    await expect(highlighted).to_have_count(1)
    await expect(highlighted).to_have_attribute("data-section", "soul_core")
    await expect(highlighted).to_have_class("break")

    kept = page.get_by_test_id("kept-round")
    await expect(kept).to_have_count(1, timeout=WAIT_MS)
    decision = kept.first.get_by_test_id("decision")
    await expect(decision.locator('[data-field="decision"]')).to_have_text("full")
    await expect(decision.locator('[data-field="tokens before"]')).to_have_text(
        f"{turn_2_report.tokens_before:,}"
    )
    await expect(decision.locator('[data-field="tokens after"]')).to_have_text(
        f"{turn_2_report.tokens_after:,}"
    )
    # The server's account of where this round's body stopped being the last one's plus new
    # messages: SOUL.md changed, so at the soul_core section.
    assert turn_2_report.prefix_break.cause == history_pb2.PREFIX_BREAK_CAUSE_SECTION
    prefix_break = turn_2_report.prefix_break
    await expect(decision.locator('[data-field="prefix break"]')).to_have_text(
        f"section soul_core: {prefix_break.tokens_invalidated:,} tokens of history invalidated, "
        f"{prefix_break.tokens_kept:,} kept"
    )
    await expect(kept.first.get_by_test_id("prefix-break")).to_have_text("prefix break: section soul_core")
    # Turn 1's four entries came as history, then turn 2's question.
    await expect(kept.first.get_by_test_id("message")).to_have_count(5)
    await expect(
        kept.first.locator('[data-testid="prompt-section"][data-section="soul_core"]')
    ).to_have_count(1)
    await expect(page.get_by_test_id("kept")).not_to_contain_text("null")
    await page.screenshot(path=str(screenshots / "3-turn.png"), full_page=True)

    # Live: turn 2's tool round on a new date records a new manifest; the page shows it as it stays open.
    await loop.live_round()
    await expect(rounds).to_have_count(2, timeout=WAIT_MS)
    await expect(kept).to_have_count(2, timeout=WAIT_MS)
    await expect(page.get_by_test_id("events-count")).to_have_text("3")
    await expect(rounds.nth(1).get_by_test_id("cache-break")).to_have_count(0)
    await page.screenshot(path=str(screenshots / "4-live.png"), full_page=True)
    assert {"1-threads.png", "2-thread.png", "3-turn.png", "4-live.png"} <= {
        p.name for p in screenshots.iterdir()
    }


async def test_console_says_when_rounds_are_not_kept(server_factory, browser, screenshots):
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0")
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/")
    # No token configured: no form, straight to the threads.
    await page.locator(f'[data-testid="thread"][data-thread="{THREAD}"]').click(timeout=WAIT_MS)
    await page.locator('[data-testid="turn-item"][data-turn="turn-1"]').click(timeout=WAIT_MS)
    await expect(page.get_by_test_id("not-kept")).to_contain_text("--keep-rendered-requests", timeout=WAIT_MS)
    await expect(page.get_by_test_id("token-form")).to_be_hidden()
    # The manifest view needs nothing kept: turn 1's sections and fingerprints are there.
    await expect(page.get_by_test_id("manifest-round")).to_have_count(1, timeout=WAIT_MS)
    await expect(page.locator('tr[data-section="soul_core"]')).to_have_count(1)
    await expect(page.get_by_test_id("events-count")).to_have_text("2")
    await page.screenshot(path=str(screenshots / "5-not-kept.png"), full_page=True)


async def test_console_signs_in_for_the_tab_only_and_never_puts_the_token_in_a_url(
    server_factory, browser, screenshots
):
    """With a token configured the page asks for one, keeps it in the tab's sessionStorage (no
    localStorage, no cookie), sends it as a header and in no URL; signing out forgets it, and another
    tab asks again."""
    from playwright.async_api import expect

    handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
    loop = AgentLoop(handle.channel(), handle.metadata(), handle.home)
    await loop.two_turns()
    page = await browser.new_page()
    urls: list[str] = []
    authorizations: set[str] = set()

    def seen(request) -> None:
        urls.append(request.url)
        if "authorization" in request.headers:
            authorizations.add(request.headers["authorization"])

    page.on("request", seen)
    start = f"http://{handle.running.http_address}/"
    await page.goto(start)
    await page.get_by_test_id("token-input").fill("not-the-token")
    await page.get_by_test_id("token-submit").click()
    await expect(page.locator("#token-error")).to_have_text("That token was refused.", timeout=WAIT_MS)
    await page.get_by_test_id("token-input").fill(TOKEN)
    await page.get_by_test_id("token-submit").click()
    await expect(page.locator(f'[data-testid="thread"][data-thread="{THREAD}"]')).to_be_visible(
        timeout=WAIT_MS
    )
    await expect(page.get_by_test_id("sign-out")).to_be_visible()
    await page.screenshot(path=str(screenshots / "6-signed-in.png"), full_page=True)

    assert await page.evaluate("sessionStorage.getItem('pioneer-console-token')") == TOKEN
    assert await page.evaluate("localStorage.length") == 0
    assert await browser.cookies() == []
    assert page.url == start
    assert urls and not any(TOKEN in url for url in urls)
    assert f"Bearer {TOKEN}" in authorizations
    assert await page.get_by_test_id("token-input").input_value() == ""

    # Another tab shares no sessionStorage: it asks for a token again.
    other = await browser.new_page()
    await other.goto(start)
    await expect(other.get_by_test_id("token-form")).to_be_visible(timeout=WAIT_MS)

    await page.get_by_test_id("sign-out").click()
    await expect(page.get_by_test_id("token-form")).to_be_visible(timeout=WAIT_MS)
    await expect(page.get_by_test_id("threads")).to_be_hidden()
    assert await page.evaluate("sessionStorage.getItem('pioneer-console-token')") is None
    await page.reload()
    await expect(page.get_by_test_id("token-form")).to_be_visible(timeout=WAIT_MS)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_console_resumes_after_the_server_restarts(server_factory, browser, screenshots, tmp_path):
    from playwright.async_api import expect

    home = tmp_path / "home"
    config = Config(
        listen="127.0.0.1:0",
        home=home,
        grace_seconds=0.5,
        http_listen=f"127.0.0.1:{_free_port()}",
        keep_rendered_requests=True,
    )
    first = await start_server(config)
    channel = grpc.aio.insecure_channel(first.address)
    try:
        await AgentLoop(channel, (), home).two_turns()
        page = await browser.new_page()
        await page.goto(f"http://{config.http_listen}/")
        await page.locator(f'[data-testid="thread"][data-thread="{THREAD}"]').click(timeout=WAIT_MS)
        await page.locator('[data-testid="turn-item"][data-turn="turn-2"]').click(timeout=WAIT_MS)
        await expect(page.get_by_test_id("events-count")).to_have_text("2", timeout=WAIT_MS)
        await expect(page.get_by_test_id("live")).to_have_text("live")
    finally:
        await channel.close()
        await first.stop(0.5)
    await expect(page.get_by_test_id("live")).to_have_text("reconnecting…", timeout=WAIT_MS)
    # The same database and HTTP address, a new process state: the page was never reloaded.
    second = await server_factory(home=home, http_listen=config.http_listen, keep_rendered_requests=True)
    await AgentLoop(second.channel(), (), home).live_round()
    await expect(page.get_by_test_id("events-count")).to_have_text("3", timeout=WAIT_MS)
    await expect(page.get_by_test_id("manifest-round")).to_have_count(2, timeout=WAIT_MS)
    await expect(page.get_by_test_id("kept-round")).to_have_count(2, timeout=WAIT_MS)
    await expect(page.get_by_test_id("live")).to_have_text("live")
    await page.screenshot(path=str(screenshots / "6-resumed.png"), full_page=True)
