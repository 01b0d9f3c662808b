"""examples/agent_loop.py runs to its end against a live server (make test also runs it as a script)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from pioneer_grpc.client import AsyncClient, ConnectOptions

ROOT = Path(__file__).resolve().parents[2]


async def test_the_example_agent_loop_runs(server_factory):
    server = await server_factory(token="loop-token")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "examples" / "agent_loop.py"),
        env={"PIONEER_ADDR": server.address, "PIONEER_TOKEN": "loop-token", "PATH": "/usr/bin:/bin"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    assert out.decode().splitlines() == [
        "The folder holds: README.md, notes.txt (1 screenshot).",
        "You said: thanks",
        "history: CHAT_ROLE_USER CHAT_ROLE_ASSISTANT CHAT_ROLE_TOOL CHAT_ROLE_ASSISTANT CHAT_ROLE_USER"
        " CHAT_ROLE_ASSISTANT",
        "stable prefix changed between turns: False",
    ]
    # Each round's usage went with the next call on its turn: three rounds, each with what the
    # provider (the stand-in) reported beside what was expected of the body the server rendered.
    client = AsyncClient(server.channel(), ConnectOptions())
    threads = await client.list_threads(metadata=server.metadata())
    [thread] = threads.threads
    answer = await client.list_round_usage(thread_id=thread.thread_id, metadata=server.metadata())
    rounds = sorted(answer.rounds, key=lambda r: (r.turn_id, r.turn_message_count))
    assert [r.turn_message_count for r in rounds] == [1, 3, 1]
    assert all(r.reported.input_tokens > 0 and r.HasField("expected_input_tokens") for r in rounds)
    assert all(r.HasField("reported_input_cost_usd") for r in rounds)
