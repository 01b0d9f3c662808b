"""The console signed in with a viewer's token (tenants file): it reads every view and watches live."""

from __future__ import annotations

from tests.tenants.files import AGENT, VIEWER, write_tenants
from tests.web.agent_loop import THREAD, AgentLoop
from tests.web.browser import WAIT_MS


async def test_a_viewer_token_signs_in_reads_and_watches(server_factory, browser, screenshots, tmp_path):
    from playwright.async_api import expect

    path = write_tenants(tmp_path / "tenants.toml")
    handle = await server_factory(http_listen="127.0.0.1:0", tenants_file=path, keep_rendered_requests=True)
    loop = AgentLoop(handle.channel(), (("authorization", f"Bearer {AGENT}"),), handle.home)
    await loop.two_turns()

    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/")
    await page.get_by_test_id("token-input").fill(VIEWER)
    await page.get_by_test_id("token-submit").click()
    thread = page.locator(f'[data-testid="thread"][data-thread="{THREAD}"]')
    await expect(thread).to_be_visible(timeout=WAIT_MS)
    await thread.click()
    await expect(page.get_by_test_id("events-count")).to_have_text("2", timeout=WAIT_MS)
    await page.locator('[data-testid="turn-item"][data-turn="turn-2"]').click()
    await expect(page.get_by_test_id("manifest-round")).to_have_count(1, timeout=WAIT_MS)
    await expect(page.get_by_test_id("kept-round")).to_have_count(1, timeout=WAIT_MS)
    await expect(page.get_by_test_id("live")).to_have_text("live", timeout=WAIT_MS)

    # The agent's next round reaches the viewer's open page through its watch.
    await loop.live_round()
    await expect(page.get_by_test_id("manifest-round")).to_have_count(2, timeout=WAIT_MS)
    await expect(page.get_by_test_id("events-count")).to_have_text("3")
    await expect(page.get_by_test_id("token-form")).to_be_hidden()
    await page.screenshot(path=str(screenshots / "viewer.png"), full_page=True)
