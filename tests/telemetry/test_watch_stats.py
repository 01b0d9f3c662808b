"""`pioneer-grpc watch --stats`: rounds per thread and the prompt-cache breaks, by section."""

from __future__ import annotations

import asyncio
import io
import json

from pioneer_grpc.cli import build_parser
from pioneer_grpc.cli.watch import follow
from pioneer_grpc.cli.watch_stats import WatchStats
from tests.support import eventually
from tests.telemetry.rounds import Rounds


async def _three_rounds_with_a_soul_edit(server) -> None:
    rounds = Rounds(await server.client())
    await rounds.compile_on("agent", "turn-1", "Date: 2026-11-30")
    await rounds.compile_on("agent", "turn-2", "Date: 2026-11-30")
    await rounds.compile_on("other", "turn-1", "Date: 2026-11-30")
    soul = server.home / "SOUL.md"
    soul.write_text(soul.read_text() + "\nNever guess a path.\n")
    await rounds.compile_on("agent", "turn-3", "Date: 2026-11-30")


async def test_each_round_says_how_the_cache_fared_and_the_table_sums_up(seeded_server):
    server = seeded_server
    await _three_rounds_with_a_soul_edit(server)
    out = io.StringIO()
    status = await asyncio.wait_for(follow(server.address, count=4, out=out, stats=WatchStats()), 10)
    assert status == 0
    lines = out.getvalue().splitlines()
    assert [line.split(" ", 1)[1] for line in lines[:4]] == [
        "thread=agent turn=turn-1 round=1 cache=first breaks=0",
        "thread=agent turn=turn-2 round=2 cache=kept breaks=0",
        "thread=other turn=turn-1 round=1 cache=first breaks=0",
        "thread=agent turn=turn-3 round=3 cache=break:soul_core breaks=1",
    ]
    assert [line.split() for line in lines[4:]] == [
        ["thread", "rounds", "breaks", "by", "section"],
        ["agent", "3", "1", "soul_core=1"],
        ["other", "1", "0", "-"],
    ]


async def test_json_stats(seeded_server):
    server = seeded_server
    await _three_rounds_with_a_soul_edit(server)
    out = io.StringIO()
    await asyncio.wait_for(
        follow(server.address, thread_id="agent", count=3, as_json=True, out=out, stats=WatchStats()), 10
    )
    objects = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [o["cache"] for o in objects[:3]] == ["first", "kept", "break:soul_core"]
    assert objects[3] == {
        "thread_id": "agent",
        "rounds": 3,
        "cache_breaks": 1,
        "by_section": {"soul_core": 1},
    }


async def test_the_table_is_printed_once_caught_up(seeded_server):
    server = seeded_server
    await _three_rounds_with_a_soul_edit(server)
    out = io.StringIO()
    following = asyncio.create_task(follow(server.address, count=5, out=out, stats=WatchStats()))
    await eventually(lambda: "by section" in out.getvalue(), what="the table, once caught up")
    assert "agent" in out.getvalue().split("by section", 1)[1]
    await Rounds(await server.client()).compile_on("agent", "turn-4", "Date: 2026-11-30")
    assert await asyncio.wait_for(following, 10) == 0
    assert "thread=agent turn=turn-4 round=4 cache=kept breaks=1" in out.getvalue()


def test_the_flag_is_parsed():
    args = build_parser().parse_args(["watch", "--stats", "--count", "2"])
    assert args.stats
    assert args.count == 2
