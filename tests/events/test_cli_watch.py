"""`pioneer-grpc watch`: the line and JSON formats, and resuming across a server restart."""

from __future__ import annotations

import asyncio
import io
import json
import re
import socket
import sys
from dataclasses import replace

from pioneer_grpc.cli.watch import follow
from pioneer_grpc.config import Config
from pioneer_grpc.server.app import start_server
from pioneer_grpc.service.observe import record_manifest
from tests.events.helpers import compile_turn, eventually, numbered_manifest

LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z #(\d+) thread=(\S+) turn=(\S+) profile=full sections=(\d+)"
    r" stable=([0-9a-f]{12}) dynamic=([0-9a-f]{12}) full=([0-9a-f]{12}) diagnostics=(\d+)$"
)


async def test_lines_show_each_event_once_backlog_then_live(server) -> None:
    first = await compile_turn(server.channel(), "agent", "turn-1", "round 1")
    out, err = io.StringIO(), io.StringIO()
    following = asyncio.create_task(follow(server.address, count=2, out=out, err=err))
    second = await compile_turn(server.channel(), "agent", "turn-2", "round 2")
    assert await asyncio.wait_for(following, 10) == 0
    lines = out.getvalue().splitlines()
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    manifest = second.payload.manifest
    assert [m.groups() for m in parsed if m][1] == (
        str(second.manifest_event_id),
        "agent",
        "turn-2",
        str(len(manifest.section_ids)),
        manifest.fingerprint_stable[:12],
        manifest.fingerprint_dynamic[:12],
        manifest.fingerprint_full[:12],
        str(len(manifest.diagnostics)),
    )
    assert parsed[0]
    assert parsed[0].group(1) == str(first.manifest_event_id)
    assert err.getvalue() == ""


async def test_json_lines_filtered_by_thread_and_after(server) -> None:
    ids = [
        await record_manifest(server.ctx, f"t{n % 2}", f"turn-{n}", numbered_manifest(n)) for n in range(6)
    ]
    out = io.StringIO()
    status = await asyncio.wait_for(
        follow(server.address, thread_id="t1", after=ids[1], as_json=True, count=2, out=out), 10
    )
    assert status == 0
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(e["event_id"], e["thread_id"], e["turn_id"]) for e in events] == [
        (str(ids[3]), "t1", "turn-3"),
        (str(ids[5]), "t1", "turn-5"),
    ]
    assert events[0]["manifest"]["section_ids"] == ["identity", "dynamic_context"]


async def test_a_server_restart_loses_and_repeats_nothing(tmp_path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = replace(Config(listen=f"127.0.0.1:{port}", home=tmp_path / "home"), grace_seconds=0.2)
    running = await start_server(config)
    out, err = io.StringIO(), io.StringIO()
    following = asyncio.create_task(follow(running.address, count=4, out=out, err=err))
    ids = [await record_manifest(running.ctx, "t", f"turn-{n}", numbered_manifest(n)) for n in range(2)]
    await eventually(lambda: len(out.getvalue().splitlines()) == 2)
    await running.stop()
    # Committed while nobody serves: the backlog after the last printed id must bring it.
    restarted = await start_server(config)
    try:
        ids += [await record_manifest(restarted.ctx, "t", f"turn-{n}", numbered_manifest(n)) for n in (2, 3)]
        assert await asyncio.wait_for(following, 20) == 0
    finally:
        await restarted.stop(0.2)
    printed = [int(m.group(1)) for line in out.getvalue().splitlines() if (m := LINE.match(line))]
    assert printed == ids
    assert "UNAVAILABLE" in err.getvalue()
    assert f"resuming after event {ids[1]}" in err.getvalue()


async def test_module_entry_point_prints_and_exits_after_count(server) -> None:
    ids = [await record_manifest(server.ctx, "t", f"turn-{n}", numbered_manifest(n)) for n in range(2)]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pioneer_grpc.cli.watch",
        "--addr",
        server.address,
        "--count",
        "2",
        "--json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
    assert [int(json.loads(line)["event_id"]) for line in stdout.decode().splitlines()] == ids


async def test_a_non_retryable_error_exits_with_status_one(server_factory) -> None:
    handle = await server_factory(token="secret")
    err = io.StringIO()
    status = await asyncio.wait_for(follow(handle.address, token="wrong", err=err), 10)
    assert status == 1
    assert err.getvalue() == "pioneer-grpc watch: UNAUTHENTICATED: invalid bearer token\n"


async def test_watch_gives_up_after_bounded_failed_reconnects() -> None:
    with socket.socket() as probe:  # nobody listens there once closed
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    out, err = io.StringIO(), io.StringIO()
    status = await asyncio.wait_for(follow(address, out=out, err=err, max_failures=2), 60)
    assert status == 1
    last = err.getvalue().strip().splitlines()[-1]
    assert last.startswith(f"pioneer-grpc watch: gave up: {address} answered nothing in 2 reconnects")
    assert "--retry-forever keeps trying" in last
