"""What an operator reads at night: process and in-flight metrics, the serving state, and log lines that
name the worker, the thread and turn, and the reason a call failed."""

from __future__ import annotations

import json
import logging

import grpc
import pytest

from pioneer_grpc import cli
from pioneer_grpc.server.logs import RequestIdFilter
from pioneer_grpc.telemetry.logs import JsonFormatter
from pioneer_grpc.v1 import (
    history_service_pb2,
    manifest_service_pb2,
    manifest_service_pb2_grpc,
)
from tests.support import eventually, failure
from tests.telemetry.test_metrics import scrape, value


async def _scrape_until(address: str, name: str, wanted: float) -> float:
    async def reached() -> bool:
        _, samples = await scrape(address)
        return value(samples, name) == wanted

    await eventually(reached, what=f"{name} == {wanted}")
    return wanted


async def test_process_in_flight_serving_and_connection_gauges(server_factory):
    server = await server_factory(metrics_listen="127.0.0.1:0")
    address = server.running.metrics_address
    _, idle = await scrape(address)
    assert value(idle, "process_resident_memory_bytes") > 10_000_000
    assert value(idle, "process_open_fds") > 5
    assert value(idle, "pioneer_serving") == 1
    assert value(idle, "pioneer_rpcs_in_flight") == 0

    # A raw call: the test holds it open, then cancels it on the wire, to read the in-flight gauge.
    watch = manifest_service_pb2_grpc.ManifestServiceStub(server.channel())
    call = watch.WatchManifests(manifest_service_pb2.WatchManifestsRequest())
    assert (await call.read()).HasField("heartbeat")
    _, during = await scrape(address)
    assert value(during, "pioneer_rpcs_in_flight") == 1
    assert value(during, "pioneer_grpc_connections") == 1
    call.cancel()
    assert await _scrape_until(address, "pioneer_rpcs_in_flight", 0) == 0

    await server.running.database_health.close()
    _, stopping = await scrape(address)
    assert value(stopping, "pioneer_serving") == 0


def _json_lines(caplog: pytest.LogCaptureFixture, logger: str) -> list[dict]:
    formatter = JsonFormatter()
    return [json.loads(formatter.format(r)) for r in caplog.records if r.name == logger]


async def test_a_failed_rpcs_access_line_names_its_thread_and_reason(server, caplog):
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(RequestIdFilter())
    client = await server.client()
    failed = await failure(
        client.get_thread(history_service_pb2.GetThreadRequest(thread_id="no-such-thread"))
    )
    assert failed.code == grpc.StatusCode.NOT_FOUND

    def access_lines() -> list[dict]:
        return [line for line in _json_lines(caplog, "pioneer_grpc.access") if "GetThread" in line["method"]]

    # The access line is written once the status has left.
    await eventually(lambda: bool(access_lines()), what="the access line of GetThread")
    [line] = access_lines()
    assert line["code"] == "NOT_FOUND"
    assert line["reason"] == "THREAD_NOT_FOUND"
    assert line["thread_id"] == "no-such-thread"
    assert line["pid"] > 0
    assert "worker" not in line


def test_a_worker_process_line_names_its_index():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", (), None)
    record.processName = "pioneer-worker-3"
    line = json.loads(JsonFormatter().format(record))
    assert (line["worker"], line["pid"]) == (3, record.process)


def test_two_workers_on_sqlite_start_with_a_warning(tmp_path, monkeypatch, caplog):
    import pioneer_grpc.server.workers as workers

    started: list[int] = []
    monkeypatch.setattr(workers, "serve_workers", lambda config: started.append(config.workers) or 0)
    monkeypatch.setattr("pioneer_grpc.server.logs.configure_logging", lambda level, handler: None)
    caplog.set_level(logging.WARNING)
    assert cli.main(["serve", "--home", str(tmp_path), "--workers", "2"]) == 0
    assert started == [2]
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith("2 workers on SQLite")
    assert "PostgreSQL" in warning
