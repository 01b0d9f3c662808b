"""`serve --workers N`: N server processes on one port, each with its own event loop.

The supervisor (this module, in the process the user started) prepares the
store once (migrations, and the bootstrap files when it seeds them), reserves the port with SO_REUSEPORT
(so `:0` becomes one concrete port every worker shares), starts N worker
processes (spawned, never forked: gRPC does not survive a fork), says
"serving on" once all N answer, stops them all on SIGTERM or SIGINT, and passes
SIGHUP on to each (each reloads the tenants file). The kernel spreads new connections across the workers.

A worker that dies is logged (its number, pid, and the signal or exit code) and
started again; the others keep serving meanwhile. With --log-format json every
supervisor event is a JSON line: the start-up line on stdout, and on stderr each
worker's end (ERROR), its serving again (INFO), stopping and stopped.

With --metrics-listen the supervisor serves the one endpoint there
(telemetry/worker_metrics.py): every worker's counters and histograms as
totals, a dead worker's counts included, each live worker's gauges by a
`worker` label, and the restarts. Workers serve theirs on loopback ports only
the supervisor reads. A worker that dies again soon
after it started waits longer each time (RESTART_BACKOFF_SECONDS, doubling up to
RESTART_BACKOFF_MAX_SECONDS); one that served for STABLE_SECONDS starts over at
no wait.

The supervisor and its workers die together. Each worker asks the kernel to
kill it when the supervisor ends (PR_SET_PDEATHSIG with SIGKILL), however it
ends, kill -9 included. SIGKILL, not a graceful stop: a supervisor that did not
stop its workers itself died abruptly, every acknowledged write was committed
before its answer, a call in flight fails UNAVAILABLE either way (the port goes
away with the workers) and is retried, and the kernel needs nothing from the
worker (a graceful stop took nearly two seconds on a busy 2-core machine, and a
worker whose event loop is stuck would never take it). multiprocessing's resource
tracker ends by itself once neither the supervisor nor a worker holds its pipe.

Process titles say which is which in `ps`: `pioneer-grpc serve: supervisor
(2 workers) 127.0.0.1:50051` and `pioneer-grpc serve: worker 1/2 127.0.0.1:50051`.

Workers share nothing but the database: each has its own caches, each validated
by the database (a history answer by its version query, a compile by the files it
read). Manifest events cross workers the way they cross replicas: PostgreSQL
LISTEN/NOTIFY, or on SQLite every worker's hub reading the events table by id
every WORKER_POLL_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

import setproctitle

from pioneer_grpc import __version__
from pioneer_grpc.config import Config
from pioneer_grpc.telemetry.logs import announce
from pioneer_grpc.telemetry.worker_metrics import (
    MULTIPROC_ENV,
    WorkerTotals,
    aggregate_registry,
    fresh_directory,
)

log = logging.getLogger(__name__)

# From the first spawn until every worker answers; past it the start fails.
START_TIMEOUT_SECONDS = 120.0
# Waits before restarting a worker that died within STABLE_SECONDS of its start.
RESTART_BACKOFF_SECONDS = 0.5
RESTART_BACKOFF_MAX_SECONDS = 30.0
STABLE_SECONDS = 10.0
# How often the supervisor looks at its stop flag while nothing else happens.
TICK_SECONDS = 0.2

_PR_SET_PDEATHSIG = 1


def _reserve(listen: str) -> tuple[socket.socket, str]:
    """A bound (not listening) SO_REUSEPORT socket holding the port, and the concrete HOST:PORT."""
    host, _, port = listen.rpartition(":")
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    holder = socket.socket(family, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    holder.bind((bare, int(port)))
    return holder, f"{host}:{holder.getsockname()[1]}"


async def _prepare_store(config: Config) -> None:
    """Migrations and bootstrap files, once, before any worker opens the store."""
    from pioneer_grpc.compiler.seed import ensure_bootstrap_files
    from pioneer_grpc.server.app import migrate_reachable
    from pioneer_grpc.store.engine import create_engine

    await asyncio.to_thread(config.home.mkdir, parents=True, exist_ok=True)
    if config.seeds_bootstrap_files:
        await asyncio.to_thread(ensure_bootstrap_files, config.home)
    engine = create_engine(config.effective_database_url, config.sqlite_synchronous)
    try:
        await migrate_reachable(engine)
    finally:
        await engine.dispose()


def _die_with_parent(supervisor: int) -> None:
    """SIGKILL to this process when the supervisor ends; at once if it has already ended."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
    # The supervisor may have died before the prctl: the worker is then someone else's child.
    if os.getppid() != supervisor:
        os.kill(os.getpid(), signal.SIGKILL)


def _worker_main(config: Config, number: int, total: int, supervisor: int, ready: Connection) -> None:
    _die_with_parent(supervisor)
    setproctitle.setproctitle(f"pioneer-grpc serve: worker {number}/{total} {config.listen}")
    from pioneer_grpc.server.logs import configure_logging
    from pioneer_grpc.telemetry.logs import log_handler

    configure_logging(config.log_level, log_handler(config.log_format))
    asyncio.run(_worker(config, ready))


def _worker_config(config: Config, address: str) -> Config:
    """The worker's own settings: the shared port; its metrics (when on) on a loopback port of its own,
    which it reports when ready and only the supervisor reads."""
    return replace(config, listen=address, metrics_listen="127.0.0.1:0" if config.metrics_listen else "")


async def _worker(config: Config, ready: Connection) -> None:
    from pioneer_grpc.server.app import start_server
    from pioneer_grpc.server.heap import freeze_start_up

    running = await start_server(config, announce=False)
    freeze_start_up()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, running.reload_tenants)
    metrics_port = running.ctx.telemetry.metrics_port or 0
    with contextlib.suppress(OSError):  # the supervisor is gone: the stop below follows
        ready.send_bytes(f"ready {metrics_port}".encode())
    ready.close()
    await stop.wait()
    await running.stop()


def restart_delay(quick_deaths: int) -> float:
    """Seconds before a worker starts again after its `quick_deaths`-th death in a row within
    STABLE_SECONDS of its start: none after the first, then doubling from RESTART_BACKOFF_SECONDS."""
    if quick_deaths <= 1:
        return 0.0
    return float(min(RESTART_BACKOFF_SECONDS * 2.0 ** (quick_deaths - 2), RESTART_BACKOFF_MAX_SECONDS))


def how_it_ended(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


@dataclass
class _Slot:
    """Worker number `number` (1-based): its current process, and when it next starts if it is down."""

    number: int
    config: Config
    process: BaseProcess | None = None
    ready: Connection | None = None
    started_at: float = 0.0
    serving: bool = False
    quick_deaths: int = 0
    restart_at: float | None = None
    # Started again after it ended (not its first start).
    restarting: bool = False


class _Supervisor:
    def __init__(self, config: Config, address: str, totals: WorkerTotals | None = None) -> None:
        self.total = config.workers
        self.context: SpawnContext = multiprocessing.get_context("spawn")
        self.slots = [
            _Slot(number=i + 1, config=_worker_config(config, address)) for i in range(config.workers)
        ]
        self.totals = totals or WorkerTotals(config.workers)
        self.stop = threading.Event()
        self.grace = config.grace_seconds
        # Restarted workers say when they serve; those of the first start are announced together.
        self.announce = False

    def hang_up(self) -> None:
        """SIGHUP to every serving worker: each reloads the tenants file itself (one still starting
        reads the file as it starts, and would die of a SIGHUP before its handler is in place)."""
        for slot in self.slots:
            if slot.serving and slot.process is not None and slot.process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.process.pid, signal.SIGHUP)

    def spawn(self, slot: _Slot) -> None:
        receiver, sender = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=_worker_main,
            args=(slot.config, slot.number, self.total, os.getpid(), sender),
            name=f"pioneer-worker-{slot.number}",
        )
        process.start()
        sender.close()
        if slot.restarting:
            self.totals.restarted(slot.number)
        slot.process, slot.ready = process, receiver
        slot.started_at, slot.serving, slot.restart_at = time.monotonic(), False, None

    def _wait(self, timeout: float) -> None:
        """Until a worker ends or reports ready, or `timeout`."""
        handles: list[Any] = []
        for slot in self.slots:
            if slot.process is not None:
                handles.append(slot.process.sentinel)
            if slot.ready is not None:
                handles.append(slot.ready)
        wait(handles, timeout=max(0.0, timeout))

    def _poll_ready(self, slot: _Slot) -> None:
        if slot.ready is None or slot.process is None:
            return
        try:
            if not slot.ready.poll():
                return
            said = slot.ready.recv_bytes().decode()
        except (EOFError, OSError):
            pass  # ended before it was ready: its sentinel reports it
        else:
            slot.serving = True
            metrics_port = int(said.split()[1]) if len(said.split()) > 1 else 0
            self.totals.serving(slot.number, metrics_port)
            if self.announce:  # back after it ended: the service is whole again
                log.info(
                    "worker %d/%d (pid %d) serving",
                    slot.number,
                    self.total,
                    slot.process.pid,
                    extra={"event": "worker_serving", "worker": slot.number, "worker_pid": slot.process.pid},
                )
        slot.ready.close()
        slot.ready = None

    def _reap(self, slot: _Slot, now: float, starting: bool = False) -> bool:
        """True when the slot's worker has ended; logs it and schedules its restart (unless `starting`:
        a worker that cannot start the first time fails the start)."""
        process = slot.process
        if process is None or process.is_alive():
            return False
        process.join()
        self.totals.ended(slot.number)
        lived = now - slot.started_at
        slot.quick_deaths = slot.quick_deaths + 1 if lived < STABLE_SECONDS else 0
        delay = restart_delay(slot.quick_deaths)
        log.error(
            "worker %d/%d (pid %d) %s after %.1f s; %s",
            slot.number,
            self.total,
            process.pid,
            how_it_ended(process.exitcode),
            lived,
            "the start fails" if starting else f"restarting it in {delay:.1f} s",
            extra={
                "event": "worker_ended",
                "worker": slot.number,
                "worker_pid": process.pid,
                "exit": how_it_ended(process.exitcode),
            },
        )
        if slot.ready is not None:
            slot.ready.close()
        slot.process, slot.ready, slot.serving = None, None, False
        slot.restart_at = now + delay
        slot.restarting = True
        return True

    def start_all(self) -> bool:
        """Starts every worker; True once all serve, False if one dies, time runs out or a stop comes."""
        for slot in self.slots:
            self.spawn(slot)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not all(slot.serving for slot in self.slots):
            if self.stop.is_set():
                return False
            now = time.monotonic()
            if now >= deadline:
                log.error("not every worker was ready within %.0f s", START_TIMEOUT_SECONDS)
                return False
            for slot in self.slots:
                self._poll_ready(slot)
                if self._reap(slot, now, starting=True):
                    return False
            self._wait(min(TICK_SECONDS, deadline - now))
        return True

    def run(self) -> None:
        """Keeps every worker running until a stop is asked for."""
        self.announce = True
        while not self.stop.is_set():
            now = time.monotonic()
            next_restart = now + TICK_SECONDS
            for slot in self.slots:
                self._poll_ready(slot)
                self._reap(slot, now)
                if slot.restart_at is not None:
                    if slot.restart_at <= now:
                        self.spawn(slot)
                    else:
                        next_restart = min(next_restart, slot.restart_at)
            self._wait(next_restart - time.monotonic())

    def stop_all(self) -> None:
        processes = [slot.process for slot in self.slots if slot.process is not None]
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(self.grace + 10)
            if process.is_alive():
                process.kill()
                process.join()


def _serve_metrics(config: Config, totals: WorkerTotals) -> tuple[Any, str] | None:
    """The one metrics endpoint, and the directory of the workers' files; None when metrics are off.

    Sets PROMETHEUS_MULTIPROC_DIR for the workers spawned after it. prometheus_client reads it when
    first imported, which this process did already (telemetry imports it): the supervisor's own
    values stay in memory."""
    if not config.metrics_listen:
        return None
    from pioneer_grpc.telemetry.metrics_http import serve_metrics

    directory = fresh_directory()
    os.environ[MULTIPROC_ENV] = directory
    token = config.token if config.metrics_require_token else ""
    host, _, port = config.metrics_listen.rpartition(":")
    server, _thread = serve_metrics(
        aggregate_registry(directory, totals, config.token), host.strip("[]"), int(port), token
    )
    log.info("metrics of every worker on http://%s/metrics", config.metrics_listen)
    return server, directory


def serve_workers(config: Config) -> int:
    """Runs until SIGTERM/SIGINT (exit 0); exit 1 when a worker fails to start."""
    setproctitle.setproctitle(f"pioneer-grpc serve: supervisor ({config.workers} workers) {config.listen}")
    asyncio.run(_prepare_store(config))
    holder, address = _reserve(config.listen)
    setproctitle.setproctitle(f"pioneer-grpc serve: supervisor ({config.workers} workers) {address}")
    totals = WorkerTotals(config.workers)
    metrics = _serve_metrics(config, totals)
    supervisor = _Supervisor(config, address, totals)

    def on_signal(_signum: int, _frame: Any) -> None:
        supervisor.stop.set()

    def on_hangup(_signum: int, _frame: Any) -> None:
        supervisor.hang_up()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    signal.signal(signal.SIGHUP, on_hangup)
    try:
        if not supervisor.start_all():
            if supervisor.stop.is_set():
                return 0
            log.error("a worker failed to start", extra={"event": "start_failed"})
            return 1
        holder.close()
        announce(
            config.log_format,
            f"pioneer-grpc {__version__} serving on {address} ({config.workers} workers)",
            event="serving",
            address=address,
            workers=config.workers,
        )
        supervisor.run()
        return 0
    finally:
        holder.close()
        if supervisor.stop.is_set():
            log.info(
                "stopping: %d workers, up to %ss each",
                config.workers,
                config.grace_seconds,
                extra={"event": "stopping"},
            )
        supervisor.stop_all()
        if metrics is not None:
            server, directory = metrics
            server.shutdown()
            server.server_close()
            shutil.rmtree(directory, ignore_errors=True)
        if supervisor.stop.is_set():
            log.info("stopped", extra={"event": "stopped"})
