"""The console's fork button, beside delete: a viewer's fork is refused and said so, and nothing is
made; an agent's makes the copy up to the turn it names, and the page shows it."""

from __future__ import annotations

import grpc
import pytest

from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
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
    await expect(page.get_by_test_id("fork-thread")).to_be_visible(timeout=WAIT_MS)


async def _fork(page, new_id: str, turn_id: str) -> None:  # type: ignore[no-untyped-def]
    await page.get_by_test_id("fork-id").fill(new_id)
    await page.get_by_test_id("fork-turn").fill(turn_id)
    await page.get_by_test_id("fork-thread").click()


async def test_fork_is_refused_to_a_viewer_and_done_for_an_agent(
    server_factory, browser, screenshots, tmp_path
):
    from playwright.async_api import expect

    path = write_tenants(tmp_path / "tenants.toml")
    handle = await server_factory(http_listen="127.0.0.1:0", tenants_file=path)
    agent = (("authorization", f"Bearer {AGENT}"),)
    loop = AgentLoop(handle.channel(), agent, handle.home)
    await loop.two_turns()
    stub = history_service_pb2_grpc.HistoryServiceStub(handle.channel())

    viewer = await browser.new_page()
    await _open(viewer, handle, VIEWER)
    await _fork(viewer, "weather-copy", "turn-1")
    await expect(viewer.get_by_test_id("fork-error")).to_contain_text("not forked", timeout=WAIT_MS)
    await viewer.screenshot(path=str(screenshots / "fork-refused.png"), full_page=True)
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await stub.GetThread(history_service_pb2.GetThreadRequest(thread_id="weather-copy"), metadata=agent)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND

    page = await browser.new_page()  # a tab of its own: its own sessionStorage, so its own token
    await _open(page, handle, AGENT)
    # Turn 2 is still open: the server's refusal is shown.
    await _fork(page, "weather-copy", "turn-2")
    await expect(page.get_by_test_id("fork-error")).to_contain_text("turn-2", timeout=WAIT_MS)
    await _fork(page, "weather-copy", "turn-1")
    copy = page.locator('[data-testid="thread"][data-thread="weather-copy"]')
    await expect(copy).to_have_count(1, timeout=WAIT_MS)
    await expect(page).to_have_url(f"http://{handle.running.http_address}/#thread=weather-copy")
    await expect(page.get_by_test_id("fork-error")).to_have_count(0, timeout=WAIT_MS)
    await page.screenshot(path=str(screenshots / "forked.png"), full_page=True)
    forked = await stub.GetThread(
        history_service_pb2.GetThreadRequest(thread_id="weather-copy"), metadata=agent
    )
    source = await stub.ListEntries(history_service_pb2.ListEntriesRequest(thread_id=THREAD), metadata=agent)
    turn_1 = [e for e in source.entries if e.turn_id == "turn-1"]
    assert forked.thread.entry_count == len(turn_1) == 4
    # The source is untouched.
    assert [e.entry_id for e in source.entries if e.turn_id == "turn-2"] == ["turn-2-u"]
