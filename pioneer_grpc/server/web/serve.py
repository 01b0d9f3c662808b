"""The HTTP listener: uvicorn serving the WebApp as a task on the running (gRPC server's) loop.

uvicorn brings HTTP/1.1 (h11), the keep-alive (idle) timeout, TLS contexts and a
graceful stop; connections are accepted, capped and timed by connections.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from pioneer_grpc.server.web.asgi import App
from pioneer_grpc.server.web.connections import Acceptor, HttpLimits, Slot, Tally, TimedH11Protocol
from pioneer_grpc.telemetry import Telemetry

# How often the start waits to see uvicorn's startup done (it has no event to wait on).
_STARTED_POLL_SECONDS = 0.01


class _EmbeddedServer(uvicorn.Server):
    """Leaves signals to the process (the CLI stops every listener on SIGTERM itself), and accepts
    through connections.Acceptor instead of asyncio's own server."""

    def __init__(self, config: uvicorn.Config, limits: HttpLimits, tally: Tally) -> None:
        super().__init__(config)
        self._limits = limits
        self.tally = tally

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def install_signal_handlers(self) -> None:
        """Signals belong to the process, not to this listener."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await self.lifespan.startup()
        config = self.config

        def protocol(slot: Slot) -> asyncio.Protocol:
            return TimedH11Protocol(
                config=config,
                server_state=self.server_state,
                app_state=self.lifespan.state,
                limits=self._limits,
                slot=slot,
                tally=self.tally,
            )

        acceptors = [Acceptor(sock, protocol, self._limits, self.tally, config.ssl) for sock in sockets or []]
        for acceptor in acceptors:
            acceptor.start()
        # uvicorn's shutdown asks of these only close() and wait_closed().
        self.servers = acceptors  # type: ignore[assignment]
        self.started = True


@dataclass
class HttpListener:
    server: _EmbeddedServer
    task: asyncio.Task[None]
    host: str
    port: int
    tls: bool

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.address}/"

    @property
    def open_connections(self) -> int:
        return self.server.tally.open

    async def stop(self, grace: float) -> None:
        """Stops accepting, lets open calls end for up to `grace` seconds, then cancels the rest."""
        self.server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self.task), grace + 1.0)
        except TimeoutError:
            self.server.force_exit = True
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


def bind(listen: str, reuse_port: bool) -> socket.socket:
    """The listening socket of HOST:PORT (port 0: any free one); OSError when it cannot be had."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    family, kind, proto, _, address = socket.getaddrinfo(
        host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            # `serve --workers N`: every worker listens on the same port, as for gRPC.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


async def start_listener(
    app: App,
    sock: socket.socket,
    grace: float,
    limits: HttpLimits,
    telemetry: Telemetry,
    tls: tuple[Path, Path] | None = None,
) -> HttpListener:
    """`tls`: (certificate chain, key) in PEM; then the listener speaks HTTPS only."""
    # Its start and stop lines say what the server's own lines say already; warnings still show.
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    options: dict[str, Any] = {}
    if tls is not None:
        options = {"ssl_certfile": str(tls[0]), "ssl_keyfile": str(tls[1])}
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        access_log=False,
        http="h11",
        ws="none",
        server_header=False,
        timeout_graceful_shutdown=max(1, round(grace)),
        **options,
    )
    tally = Tally(telemetry.metrics.http_connection_ended)
    server = _EmbeddedServer(config, limits, tally)
    telemetry.metrics.watch_http_connections(lambda: tally.open)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="pioneer-http")
    while not server.started:
        if task.done():
            task.result()
            raise OSError("the HTTP listener stopped during its start")
        await asyncio.sleep(_STARTED_POLL_SECONDS)
    host, port = sock.getsockname()[:2]
    return HttpListener(server, task, host, port, tls is not None)
