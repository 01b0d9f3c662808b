"""The console signed in with a viewer's token (tenants file): it reads every view of its tenant and
watches live, and shows nothing of another tenant's, not even a thread of the same id."""

from __future__ import annotations

from pioneer_grpc.client import Provider, tool, user_entry
from pioneer_grpc.v1 import (
    history_pb2,
    history_service_pb2,
    history_service_pb2_grpc,
    turn_service_pb2,
    turn_service_pb2_grpc,
)
from tests.tenants.files import AGENT, OTHER_AGENT, VIEWER, write_tenants
from tests.web.agent_loop import THREAD, AgentLoop
from tests.web.browser import WAIT_MS


async def test_a_viewer_token_signs_in_reads_and_watches(server_factory, browser, screenshots, tmp_path):
    from playwright.async_api import expect

    path = write_tenants(tmp_path / "tenants.toml")
    handle = await server_factory(http_listen="127.0.0.1:0", tenants_file=path, keep_rendered_requests=True)
    loop = AgentLoop(handle.channel(), (("authorization", f"Bearer {AGENT}"),), handle.home)
    await loop.two_turns()
    await _another_tenants_threads(handle.channel())

    page = await browser.new_page()
    await page.goto(f"http://{handle.running.http_address}/")
    await page.get_by_test_id("token-input").fill(VIEWER)
    await page.get_by_test_id("token-submit").click()
    thread = page.locator(f'[data-testid="thread"][data-thread="{THREAD}"]')
    await expect(thread).to_be_visible(timeout=WAIT_MS)
    # Only acme's threads: zeta's own thread is not listed, and zeta's thread of the same id is not
    # a second row.
    await expect(page.locator('[data-testid="thread"][data-thread="zeta-only"]')).to_have_count(0)
    await expect(page.locator(f'[data-testid="thread"][data-thread="{THREAD}"]')).to_have_count(1)
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
    # zeta's next round on its thread of the same id reaches no acme page.
    await _another_tenants_threads(handle.channel(), turn="z2")
    await expect(page.get_by_test_id("events-count")).to_have_text("3")
    assert "zeta's words" not in await page.content()
    await page.screenshot(path=str(screenshots / "viewer.png"), full_page=True)


async def _another_tenants_threads(channel, turn: str = "z1") -> None:
    """zeta's thread "zeta-only", and a round on zeta's own thread of the id acme's loop uses."""
    metadata = (("authorization", f"Bearer {OTHER_AGENT}"),)
    history = history_service_pb2_grpc.HistoryServiceStub(channel)
    turns = turn_service_pb2_grpc.TurnServiceStub(channel)
    for thread in ("zeta-only", THREAD):
        if turn == "z1":
            config = history_pb2.ThreadConfig(model="gpt-4o")
            await history.CreateThread(
                history_service_pb2.CreateThreadRequest(thread_id=thread, config=config), metadata=metadata
            )
        await turns.PrepareTurn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id=thread,
                turn_id=turn,
                new_entries=[user_entry(f"{turn}.user", "zeta's words", turn_id=turn)],
                tools=[tool("list_files", "List files", {"type": "object", "properties": {}})],
                provider=Provider.PROVIDER_OPENAI_CHAT_COMPLETIONS,
            ),
            metadata=metadata,
        )
