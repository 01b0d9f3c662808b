"""`serve --workers N`: N server processes on one port, each with its own event loop.

The supervisor (this module, in the process the user started) prepares the
store once (migrations, bootstrap files), reserves the port with SO_REUSEPORT
(so `:0` becomes one concrete port every worker shares), starts N worker
processes (spawned, never forked: gRPC does not survive a fork), says
"serving on" once all N answer, and stops them all on SIGTERM or SIGINT, or when
one of them dies. The kernel spreads new connections across the workers.

Workers share nothing but the database: each has its own caches, each validated
by the database (a history answer by its version query, a compile by the files it
read). Manifest events cross workers the way they cross replicas: PostgreSQL
LISTEN/NOTIFY, or on SQLite every worker's hub reading the events table by id
every WORKER_POLL_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import signal
import socket
import sys
import threading
from dataclasses import replace
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import Any

from pioneer_grpc import __version__
from pioneer_grpc.config import Config

log = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 120.0


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
    from pioneer_grpc.store.engine import create_engine
    from pioneer_grpc.store.migrate import migrate

    await asyncio.to_thread(config.home.mkdir, parents=True, exist_ok=True)
    await asyncio.to_thread(ensure_bootstrap_files, config.home)
    engine = create_engine(config.effective_database_url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


def _worker_main(config: Config, index: int, ready: Queue[int]) -> None:
    from pioneer_grpc.server.logs import configure_logging
    from pioneer_grpc.telemetry.logs import log_handler

    configure_logging(config.log_level, log_handler(config.log_format))
    asyncio.run(_worker(config, index, ready))


def _worker_config(config: Config, address: str, index: int) -> Config:
    """The worker's own settings: the shared port; its own metrics port (the given one + its index)."""
    metrics = config.metrics_listen
    if metrics:
        host, _, port = metrics.rpartition(":")
        metrics = f"{host}:{int(port) + index}" if int(port) else metrics
    return replace(config, listen=address, metrics_listen=metrics)


async def _worker(config: Config, index: int, ready: Queue[int]) -> None:
    from pioneer_grpc.server.app import start_server

    running = await start_server(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ready.put(index)
    await stop.wait()
    await running.stop()


def _wait_ready(ready: Queue[int], processes: list[BaseProcess]) -> bool:
    pending = set(range(len(processes)))
    while pending:
        if any(not p.is_alive() for p in processes):
            return False
        with contextlib.suppress(Exception):
            pending.discard(ready.get(timeout=0.2))
    return True


def _stop_all(processes: list[BaseProcess], grace: float) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(grace + 10)
        if process.is_alive():
            process.kill()
            process.join()


def serve_workers(config: Config) -> int:
    """Runs until SIGTERM/SIGINT (exit 0) or until a worker dies (exit 1)."""
    asyncio.run(_prepare_store(config))
    holder, address = _reserve(config.listen)
    context = multiprocessing.get_context("spawn")
    ready: Queue[int] = context.Queue()
    processes: list[BaseProcess] = [
        context.Process(
            target=_worker_main,
            args=(_worker_config(config, address, i), i, ready),
            name=f"pioneer-worker-{i}",
        )
        for i in range(config.workers)
    ]
    stop = threading.Event()
    stopped_by_signal: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        stopped_by_signal.append(signum)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    try:
        for process in processes:
            process.start()
        if not _wait_ready(ready, processes):
            print("pioneer-grpc serve: a worker failed to start", file=sys.stderr)
            return 1
        holder.close()
        print(f"pioneer-grpc {__version__} serving on {address} ({config.workers} workers)", flush=True)
        while not stop.wait(0.5):
            if any(not p.is_alive() for p in processes):
                log.error("a worker exited; stopping the others")
                return 1
        return 0
    finally:
        holder.close()
        _stop_all(processes, config.grace_seconds)
