"""The tenants file reloaded: a good file applies to new calls, a bad one leaves the old one in effect.

In process through the entry point SIGHUP calls (RunningServer.reload_tenants);
the signal itself on `pioneer-grpc serve` in a subprocess, alone and with workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

import grpc
import httpx
import pytest

from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.support import eventually
from tests.tenants.files import AGENT, VIEWER, tenants_toml, token_entry, write_tenants
from tests.web import connect_http as http

SCRIPT = Path(sys.executable).parent / "pioneer-grpc"
NEW = "a-token-added-later"
LIST = "/pioneer.v1.HistoryService/ListThreads"


async def _code(channel: grpc.aio.Channel, token: str) -> grpc.StatusCode:
    stub = history_service_pb2_grpc.HistoryServiceStub(channel)
    try:
        await stub.ListThreads(
            history_service_pb2.ListThreadsRequest(),
            metadata=(("authorization", f"Bearer {token}"),),
            timeout=10,
        )
    except grpc.aio.AioRpcError as err:
        return err.code()
    return grpc.StatusCode.OK


async def test_a_good_file_applies_to_new_calls_and_a_bad_one_keeps_the_old(server_factory, tmp_path, caplog):
    path = write_tenants(tmp_path / "tenants.toml")
    handle = await server_factory(http_listen="127.0.0.1:0", tenants_file=path)
    channel = handle.channel()
    async with httpx.AsyncClient(base_url=f"http://{handle.running.http_address}", timeout=30) as client:
        assert await _code(channel, NEW) == grpc.StatusCode.UNAUTHENTICATED

        # The agent's token leaves, a new one comes, the viewer becomes an agent.
        path.write_text(token_entry(NEW, "acme", "agent") + token_entry(VIEWER, "acme", "agent"))
        assert handle.running.reload_tenants() is True
        assert await _code(channel, NEW) == grpc.StatusCode.OK
        assert (await http.unary(client, LIST, {}, NEW)).status_code == 200
        assert await _code(channel, AGENT) == grpc.StatusCode.UNAUTHENTICATED
        assert (await http.unary(client, LIST, {}, AGENT)).status_code == 401
        created = await http.unary(client, "/pioneer.v1.HistoryService/CreateThread", {}, VIEWER)
        assert created.status_code == 200

        caplog.clear()
        caplog.set_level(logging.INFO, logger="pioneer_grpc.tenants")
        path.write_text(token_entry(AGENT, "acme", "superuser"))
        assert handle.running.reload_tenants() is False
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1
        assert "\n" not in errors[0].getMessage()
        assert "not reloaded, the one loaded before stays in effect" in errors[0].getMessage()
        assert "line 1: [[token]] 1: unknown role 'superuser'" in errors[0].getMessage()
        assert await _code(channel, NEW) == grpc.StatusCode.OK
        assert (await http.unary(client, LIST, {}, NEW)).status_code == 200
        assert await _code(channel, AGENT) == grpc.StatusCode.UNAUTHENTICATED

        path.unlink()
        assert handle.running.reload_tenants() is False
        assert await _code(channel, NEW) == grpc.StatusCode.OK


async def test_a_reload_with_an_unchanged_rate_keeps_the_tenant_s_bucket(server_factory, tmp_path):
    text = tenants_toml(limits="[tenant.acme]\nrequests_per_second = 0.001\nburst = 1\n")
    path = write_tenants(tmp_path / "tenants.toml", text)
    handle = await server_factory(tenants_file=path)
    channel = handle.channel()
    assert await _code(channel, AGENT) == grpc.StatusCode.OK
    assert await _code(channel, AGENT) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert handle.running.reload_tenants() is True
    assert await _code(channel, AGENT) == grpc.StatusCode.RESOURCE_EXHAUSTED
    path.write_text(tenants_toml(limits="[tenant.acme]\nrequests_per_second = 0.001\nburst = 2\n"))
    assert handle.running.reload_tenants() is True
    assert await _code(channel, AGENT) == grpc.StatusCode.OK


async def _serve(tmp_path: Path, path: Path, *extra: str) -> tuple[asyncio.subprocess.Process, str, Path]:
    log = tmp_path / "serve.log"
    args = [str(SCRIPT), "serve", "--listen", "127.0.0.1:0", "--home", str(tmp_path / "home")]
    args += ["--tenants", str(path), "--grace-seconds", "0.5", "--log-level", "INFO", *extra]
    with log.open("wb") as stderr:
        proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE, stderr=stderr)
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
    assert "serving on " in line, (line, log.read_text())
    return proc, line.split("serving on ", 1)[1].split()[0], log


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize("workers", [1, 2])
async def test_sighup_reloads_the_file_of_a_running_serve(tmp_path, workers):
    path = write_tenants(tmp_path / "tenants.toml")
    extra = ("--workers", str(workers)) if workers > 1 else ()
    proc, address, log = await _serve(tmp_path, path, *extra)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            assert await _code(channel, AGENT) == grpc.StatusCode.OK
            assert await _code(channel, NEW) == grpc.StatusCode.UNAUTHENTICATED

            path.write_text(tenants_toml() + token_entry(NEW, "newco", "agent"))
            proc.send_signal(signal.SIGHUP)
            await eventually(
                lambda: log.read_text().count("reloaded: 5 tokens") == workers,
                30,
                what="every process reloaded",
            )
        # A new channel per check: with workers, each connection lands on either.
        for _ in range(2 * workers):
            async with grpc.aio.insecure_channel(address) as channel:
                assert await _code(channel, NEW) == grpc.StatusCode.OK

        path.write_text("[[token]]\nsha256 = 'not a digest'\n")
        proc.send_signal(signal.SIGHUP)
        await eventually(
            lambda: log.read_text().count("tenants file not reloaded") == workers, 30, what="the ERROR lines"
        )
        lines = [line for line in log.read_text().splitlines() if "not reloaded" in line]
        assert all(" ERROR " in line and "sha256 must be 64 hexadecimal characters" in line for line in lines)
        assert proc.returncode is None
        for _ in range(2 * workers):
            async with grpc.aio.insecure_channel(address) as channel:
                assert await _code(channel, NEW) == grpc.StatusCode.OK
    finally:
        await _stop(proc)
    assert proc.returncode == 0, log.read_text()


async def test_serve_refuses_token_and_tenants_together(tmp_path):
    path = write_tenants(tmp_path / "tenants.toml")
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPT),
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--home",
        str(tmp_path / "home"),
        "--tenants",
        str(path),
        "--token",
        "s3cret",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    with contextlib.suppress(TimeoutError):
        _out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2, err
    assert b"--token and --tenants" in err
