"""`serve --workers 2 --log-format json --metrics-listen` through a worker's death, as an operator reads it.

Every line the supervisor and its workers write, on stdout and on stderr, is a JSON object; the events
of the night are each a line (serving, a worker's end at ERROR, its serving again at INFO, stopping,
stopped). The one metrics endpoint counts what the killed worker served before it died, and the restart.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pioneer_grpc.v1 import history_service_pb2, history_service_pb2_grpc
from tests.chaos.test_supervisor import SCRIPT, workers_by_number
from tests.support import eventually, free_port

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc")
CALLS = 12


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _created(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
    labels = (
        ("grpc_code", "OK"),
        ("grpc_method", "CreateThread"),
        ("grpc_service", "pioneer.v1.HistoryService"),
        ("tenant", ""),
    )
    return samples.get(("grpc_server_handled_total", labels), 0.0)


async def _create_threads(address: str, prefix: str) -> None:
    """CALLS threads, each on a connection of its own (so both workers serve some)."""
    for i in range(CALLS):
        async with grpc.aio.insecure_channel(address) as channel:
            await history_service_pb2_grpc.HistoryServiceStub(channel).CreateThread(
                history_service_pb2.CreateThreadRequest(thread_id=f"{prefix}-{i}"), timeout=30
            )


async def test_the_night_is_json_lines_and_the_totals_survive_a_killed_worker(tmp_path: Path) -> None:
    metrics_port = free_port()
    args = [
        str(SCRIPT),
        "serve",
        "--workers",
        "2",
        "--listen",
        "127.0.0.1:0",
        "--home",
        str(tmp_path / "home"),
    ]
    args += [
        "--log-format",
        "json",
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
        "--grace-seconds",
        "0.5",
    ]
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE, stderr=stderr)
    try:
        assert proc.stdout is not None
        first = json.loads(await asyncio.wait_for(proc.stdout.readline(), 120))
        assert (first["event"], first["workers"], first["level"]) == ("serving", 2, "INFO")
        address = first["address"]
        await _create_threads(address, "before")
        assert _created(_scrape(metrics_port)) == CALLS
        before = workers_by_number(proc.pid)
        os.kill(before[1], signal.SIGKILL)

        async def restarted() -> bool:
            now = workers_by_number(proc.pid)
            return now.get(1) not in (None, before[1]) and '"worker_serving"' in log.read_text()

        await eventually(restarted, 60, what="worker 1 restarted and serving")
        samples = _scrape(metrics_port)
        # What the killed worker counted is still in the totals, and the restart is counted.
        assert _created(samples) == CALLS
        assert samples[("pioneer_worker_restarts_total", (("worker", "1"),))] == 1
        assert samples[("pioneer_worker_restarts_total", (("worker", "2"),))] == 0
        assert samples[("pioneer_workers_serving", ())] == 2
        assert {dict(labels)["worker"] for name, labels in samples if name == "pioneer_build_info"} == {
            "1",
            "2",
        }
        await _create_threads(address, "after")
        assert _created(_scrape(metrics_port)) == 2 * CALLS
        proc.send_signal(signal.SIGTERM)
        rest, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    lines = [json.loads(line) for line in log.read_text().splitlines()]  # every line of stderr is JSON
    assert [json.loads(line) for line in rest.decode().splitlines()] == []  # stdout: the one start-up line
    events = [(line.get("event"), line["level"]) for line in lines if line.get("event")]
    assert ("worker_ended", "ERROR") in events
    assert ("worker_serving", "INFO") in events
    assert events[-2:] == [("stopping", "INFO"), ("stopped", "INFO")]
    ended = next(line for line in lines if line.get("event") == "worker_ended")
    assert (ended["worker"], ended["worker_pid"], ended["exit"]) == (1, before[1], "killed by SIGKILL")
