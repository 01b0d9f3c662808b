"""`pioneer-grpc threads delete|fork|abandon` against a running server."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from pioneer_grpc.cli import main
from pioneer_grpc.cli import threads as cli_threads
from pioneer_grpc.client import user_entry


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


async def test_fork_copies_through_a_turn_and_abandon_drops_an_open_one(server_factory, capsys):
    server = await server_factory(token="s3cret")
    client = await server.client()
    await client.create_thread(thread_id="t", config={"model": "gpt-4o"})
    await client.complete_turn(thread_id="t", turn_id="u1", entries=[user_entry("q1", "hello", turn_id="u1")])
    await client.append_entries(thread_id="t", entries=[user_entry("q2", "again", turn_id="u2")])
    flags = ["--addr", server.address, "--token", "s3cret"]
    fork = ["threads", "fork", "t", "--turn", "u1", "--thread-id", "t2", "--model", "claude-sonnet-4-6"]
    assert await asyncio.to_thread(main, [*fork, *flags]) == 0
    assert "t2: forked from t through u1 (1 turns, 1 entries, 0 summaries)" in capsys.readouterr().out
    copied = (await client.get_thread(thread_id="t2")).thread
    assert (copied.entry_count, copied.config.model) == (1, "claude-sonnet-4-6")
    # The open turn cannot be forked at: status 1 and the reason; nothing made.
    at_open = ["threads", "fork", "t", "--turn", "u2", "--thread-id", "t3", *flags]
    assert await asyncio.to_thread(main, at_open) == 1
    assert "FAILED_PRECONDITION" in capsys.readouterr().err
    assert sorted(t.thread_id for t in (await client.list_threads()).threads) == ["t", "t2"]
    assert await asyncio.to_thread(main, ["threads", "abandon", "t", "u2", *flags]) == 0
    assert "t u2: abandoned (1 entries dropped)" in capsys.readouterr().out
    assert (await client.get_thread(thread_id="t")).thread.entry_count == 1
    assert await asyncio.to_thread(main, ["threads", "abandon", "t", "u2", *flags]) == 1
    assert await asyncio.to_thread(main, ["threads", "abandon", "t", "u2", "--allow-missing", *flags]) == 0
    assert "t u2: did not exist" in capsys.readouterr().out


async def test_delete_with_a_stale_etag_keeps_the_thread(server_factory, capsys):
    server = await server_factory()
    client = await server.client()
    await client.create_thread(thread_id="t")
    etag = (await client.get_thread(thread_id="t")).thread.etag
    await client.append_entries(thread_id="t", entries=[user_entry("q1", "hello", turn_id="u1")])
    flags = ["--addr", server.address]
    assert await asyncio.to_thread(main, ["threads", "delete", "t", "--etag", etag, *flags]) == 1
    assert "ABORTED" in capsys.readouterr().err
    fresh = (await client.get_thread(thread_id="t")).thread.etag
    assert await asyncio.to_thread(main, ["threads", "delete", "t", "--etag", fresh, *flags]) == 0
    assert capsys.readouterr().out == "t: deleted\n"
    assert main(["threads", "delete", "a", "b", "--etag", fresh, *flags]) == 2
