"""The installed `pioneer-grpc serve` as a subprocess: health, SIGTERM, exit 0."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support import free_port

SCRIPT = Path(sys.executable).parent / "pioneer-grpc"


def wait_serving(address: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                    return
            except grpc.RpcError:
                time.sleep(0.1)
    raise AssertionError("server never became healthy")


def test_serve_answers_health_and_exits_zero_on_sigterm(tmp_path):
    assert SCRIPT.exists() or shutil.which("pioneer-grpc"), "console script not installed"
    address = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "PIONEER_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [str(SCRIPT), "serve", "--listen", address], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_serving(address, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    out = proc.stdout.read().decode() if proc.stdout else ""
    assert f"serving on {address}" in out
    # A home given (here by PIONEER_HOME) is a team's: no Pioneer SOUL.md is seeded into it.
    assert not (tmp_path / "home" / "SOUL.md").exists()


def test_bad_configuration_fails_start_with_a_clear_message(tmp_path):
    proc = subprocess.run(
        [str(SCRIPT), "serve", "--listen", "not-an-address", "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "configuration error: flag --listen: invalid value 'not-an-address'" in proc.stderr


def test_every_subcommand_is_wired():
    proc = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "{serve,compile,render,history,threads,watch}" in proc.stdout


def test_start_up_says_serving_once_and_alembic_stays_quiet(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "PIONEER_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [str(SCRIPT), "serve", "--listen", address], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_serving(address, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert (out + err).count("serving on") == 1, out + err
    assert "alembic" not in err, err


def test_serve_freezes_its_start_up_heap_and_says_so_on_metrics(tmp_path):
    import asyncio

    from tests.telemetry.test_metrics import scrape, value

    address, metrics = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    env = {**os.environ, "PIONEER_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [str(SCRIPT), "serve", "--listen", address, "--metrics-listen", metrics],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_serving(address, proc)
        _, samples = asyncio.run(scrape(metrics))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    # Start-up builds over a hundred thousand objects that live as long as the process; frozen,
    # no full collection walks them (gc.freeze), and /metrics shows how many.
    assert value(samples, "pioneer_gc_frozen_objects") > 50_000
