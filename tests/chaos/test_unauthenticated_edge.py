"""What an unauthenticated client can make the server keep: nothing per method name it invents."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import IO

import grpc
import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from pioneer_grpc.config import Config
from pioneer_grpc.server.app import start_server
from pioneer_grpc.v1 import echo_service_pb2
from tests.chaos.conftest import free_port
from tests.chaos.test_crash_and_startup import SCRIPT, _wait_serving
from tests.support import eventually

TOKEN = "tok-edge-3b1f"
NAME_BYTES = 4096
CALLS = 10_000
WARM_UP = 4_000
BATCH = 50


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def _series(address: str, token: str) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"http://{address}/metrics", headers={"authorization": f"Bearer {token}"})
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items())))
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
        if not sample.name.startswith("process_")
    }


async def _made_up_calls(channel: grpc.aio.Channel, first: int, count: int) -> list[grpc.StatusCode]:
    codes: list[grpc.StatusCode] = []

    async def one(n: int) -> None:
        name = f"/x{n}.{'m' * NAME_BYTES}/M{n}"
        call = channel.unary_unary(name, request_serializer=None, response_deserializer=None)
        try:
            await call(b"", timeout=30)
        except grpc.aio.AioRpcError as error:
            codes.append(error.code())

    for start in range(first, first + count, BATCH):
        await asyncio.gather(*(one(n) for n in range(start, min(start + BATCH, first + count))))
    return codes


def _start(tmp_path: Path, port: int, metrics_port: int, log: IO[bytes]) -> subprocess.Popen:
    """The server, its log in a file (a pipe nobody reads would block it)."""
    command = [str(SCRIPT), "serve", "--home", str(tmp_path / "home"), "--listen", f"127.0.0.1:{port}"]
    command += ["--token", TOKEN, "--metrics-listen", f"127.0.0.1:{metrics_port}", "--metrics-require-token"]
    return subprocess.Popen(command, stdout=log, stderr=log)


async def test_ten_thousand_made_up_methods_add_no_series_and_little_memory(tmp_path):
    port, metrics_port = free_port(), free_port()
    log = (tmp_path / "server.log").open("wb")
    proc = _start(tmp_path, port, metrics_port, log)
    address, metrics_address = f"127.0.0.1:{port}", f"127.0.0.1:{metrics_port}"
    try:
        await _wait_serving(address, proc)
        async with grpc.aio.insecure_channel(address) as channel:
            assert (await _made_up_calls(channel, 0, WARM_UP)) == [grpc.StatusCode.UNAUTHENTICATED] * WARM_UP
            series_before = await _series(metrics_address, TOKEN)
            rss_before = _rss_bytes(proc.pid)

            codes = await _made_up_calls(channel, WARM_UP, CALLS)

            growth = _rss_bytes(proc.pid) - rss_before
            series_after = await _series(metrics_address, TOKEN)
        assert codes == [grpc.StatusCode.UNAUTHENTICATED] * CALLS
        print(f"RSS growth over {CALLS:,} calls: {growth / 2**20:.2f} MiB")
        assert growth < 5 * 1024 * 1024, f"RSS grew by {growth / 2**20:.1f} MiB"
        assert series_after == series_before
        assert (
            "grpc_server_handled_total",
            (
                ("grpc_code", "UNAUTHENTICATED"),
                ("grpc_method", "other"),
                ("grpc_service", "other"),
                ("tenant", ""),
            ),
        ) in series_after
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        finally:
            proc.kill()
            log.close()


async def test_spans_of_made_up_methods_share_one_name(tmp_path):
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    config = replace(Config(listen="127.0.0.1:0", home=tmp_path / "home", grace_seconds=0.5), token=TOKEN)
    running = await start_server(config, tracer_provider=provider)
    try:
        async with grpc.aio.insecure_channel(running.address) as channel:
            echo = channel.unary_unary(
                "/pioneer.v1.EchoService/Echo",
                request_serializer=echo_service_pb2.EchoRequest.SerializeToString,
                response_deserializer=echo_service_pb2.EchoResponse.FromString,
            )
            authorized = (("authorization", f"Bearer {TOKEN}"),)
            await echo(echo_service_pb2.EchoRequest(payload=b"hi"), metadata=authorized)
            assert (await _made_up_calls(channel, 0, 50)) == [grpc.StatusCode.UNAUTHENTICATED] * 50
        # A refused call's status leaves before its handler unwinds, so its span may end just after.
        await eventually(lambda: len(spans.get_finished_spans()) >= 51, what="all 51 spans end")
        names = [span.name for span in spans.get_finished_spans()]
        assert names.count("other") == 50
        assert set(names) == {"other", "pioneer.v1.EchoService/Echo"}
    finally:
        await running.stop(grace=0.5)
        provider.shutdown()


async def test_metrics_can_require_the_token(server_factory):
    server = await server_factory(token=TOKEN, metrics_listen="127.0.0.1:0", metrics_require_token=True)
    async with httpx.AsyncClient() as client:
        url = f"http://{server.running.metrics_address}/metrics"
        assert (await client.get(url)).status_code == 401
        assert (await client.get(url, headers={"authorization": "Bearer wrong"})).status_code == 401
        good = await client.get(url, headers={"authorization": f"Bearer {TOKEN}"})
    assert good.status_code == 200
    assert "grpc_server_handled" in good.text
