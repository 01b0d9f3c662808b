"""`pioneer-grpc threads delete THREAD...` against a running server."""

from __future__ import annotations

import grpc
import pytest

from pioneer_grpc.cli import main
from pioneer_grpc.cli import threads as cli_threads


async def test_delete_removes_each_thread_and_a_repeat_needs_allow_missing(server_factory):
    server = await server_factory(token="s3cret")
    history = await server.client()
    for thread_id in ("a", "b"):
        await history.create_thread(thread_id=thread_id)
    lines = await cli_threads.delete(server.address, ["a", "b"], token="s3cret")
    assert lines == ["a: deleted", "b: deleted"]
    assert [t.thread_id for t in (await history.list_threads()).threads] == []
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await cli_threads.delete(server.address, ["a"], token="s3cret")
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    again = await cli_threads.delete(server.address, ["a"], token="s3cret", allow_missing=True)
    assert again == ["a: did not exist"]


def test_the_command_parses_and_fails_with_status_1_on_an_unreachable_server(capsys):
    status = main(["threads", "delete", "t1", "--addr", "127.0.0.1:1", "--allow-missing"])
    assert status == 1
    assert capsys.readouterr().err.startswith("pioneer-grpc threads delete: ")
