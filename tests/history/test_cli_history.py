"""`pioneer-grpc history THREAD` against a running server."""

from __future__ import annotations

import argparse
import json

import grpc
import pytest

from pioneer_grpc.cli import history as cli_history
from tests.history.rpc import config, create
from tests.history.test_load_rpc import fill


async def test_text_report_shows_decision_and_each_message(server):
    history = await server.client()
    await create(history, "t", config(2_000, 1_000, model="m"))
    await fill(history, "t", 5)
    text = await cli_history.describe(server.address, "t")
    lines = text.splitlines()
    assert lines[0] == "thread t: next load is SUMMARIZED"
    assert lines[1] == "  budget       1000 tokens (threshold 800, summary target 100)"
    assert lines[2] == "  tokens       1000 loaded -> 1000 sent (cl100k_base)"
    assert lines[3] == "  entries      10 loaded, 10 kept, 0 dropped"
    assert lines[4] == "  summary      none by extractive"
    assert lines[5].startswith("  note         compression_pending: dry run: the next load asks extractive")
    assert lines[6] == "messages (10):"
    assert lines[7] == "     1  user          100  " + "word " * 15 + "wo..."
    assert lines[8].startswith("     2  assistant     100  word word")


async def test_json_report(server):
    history = await server.client()
    await create(history, "t", config(2_000, 1_000))
    await fill(history, "t", 1)
    data = json.loads(await cli_history.describe(server.address, "t", as_json=True))
    assert data["report"]["decision"] == "HISTORY_DECISION_FULL"  # protobuf JSON names
    assert data["report"]["summary_use"] == "SUMMARY_USE_NONE"
    assert [(m["role"], m["tokens"]) for m in data["messages"]] == [("user", 100), ("assistant", 100)]


async def test_token_and_errors(server_factory):
    server = await server_factory(token="s3cret")
    history = await server.client()  # sends the server's token
    await history.create_thread(thread_id="t")
    text = await cli_history.describe(server.address, "t", token="s3cret")
    assert text.startswith("thread t: next load is FULL")
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await cli_history.describe(server.address, "nope", token="s3cret")
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND


def test_parser_registers_the_subcommand():
    parser = argparse.ArgumentParser()
    cli_history.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["history", "thr_1", "--addr", "h:1", "--token", "x", "--json"])
    assert (args.thread, args.addr, args.token, args.json, args.func) == (
        "thr_1",
        "h:1",
        "x",
        True,
        cli_history.run,
    )
