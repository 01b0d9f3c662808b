"""The console's delete button: a viewer's delete is refused and said so; an agent's deletes the
thread and the list no longer holds it."""

from __future__ import annotations

from tests.tenants.files import AGENT, VIEWER, write_tenants
from tests.web.agent_loop import THREAD, AgentLoop
from tests.web.browser import WAIT_MS


async def _open(page, handle, token):  # type: ignore[no-untyped-def]
    from playwright.async_api import expect

    await page.goto(f"http://{handle.running.http_address}/")
    await page.get_by_test_id("token-input").fill(token)
    await page.get_by_test_id("token-submit").click()
    thread = page.locator(f'[data-testid="thread"][data-thread="{THREAD}"]')
    await expect(thread).to_be_visible(timeout=WAIT_MS)
    await thread.click()
    await expect(page.get_by_test_id("delete-thread")).to_be_visible(timeout=WAIT_MS)
    return thread


async def test_delete_is_refused_to_a_viewer_and_done_for_an_agent(
    server_factory, browser, screenshots, tmp_path
):
    from playwright.async_api import expect

    path = write_tenants(tmp_path / "tenants.toml")
    handle = await server_factory(http_listen="127.0.0.1:0", tenants_file=path)
    loop = AgentLoop(handle.channel(), (("authorization", f"Bearer {AGENT}"),), handle.home)
    await loop.two_turns()

    viewer = await browser.new_page()
    viewer.on("dialog", lambda dialog: dialog.accept())
    await _open(viewer, handle, VIEWER)
    await viewer.get_by_test_id("delete-thread").click()
    await expect(viewer.get_by_test_id("delete-error")).to_contain_text("not deleted", timeout=WAIT_MS)
    await viewer.screenshot(path=str(screenshots / "delete-refused.png"), full_page=True)

    page = await browser.new_page()  # a tab of its own: its own sessionStorage, so its own token
    page.on("dialog", lambda dialog: dialog.accept())
    thread = await _open(page, handle, AGENT)
    await page.get_by_test_id("delete-thread").click()
    await expect(thread).to_have_count(0, timeout=WAIT_MS)
    await expect(page.locator("#thread")).to_be_hidden(timeout=WAIT_MS)
