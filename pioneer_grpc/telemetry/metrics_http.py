"""The Prometheus endpoint's HTTP server: bounded in connections and in how long one may idle.

prometheus_client's own server gives each connection a thread that waits for
a request as long as the client keeps the socket open, so idle connections
hold threads and descriptors without end. Here a connection that sends nothing
for IDLE_SECONDS is closed, at most MAX_CONNECTIONS are served at once (more
are closed at accept, with a log line), and, when a token is set, a scrape
must carry `Authorization: Bearer <token>` (401 otherwise).
"""

from __future__ import annotations

import hmac
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

log = logging.getLogger(__name__)

IDLE_SECONDS = 10.0
MAX_CONNECTIONS = 64
# At most one "refused" line per this many seconds.
REFUSAL_LOG_SECONDS = 10.0


class _QuietHandler(WSGIRequestHandler):
    timeout = IDLE_SECONDS

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _BoundedServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    max_connections = MAX_CONNECTIONS

    def server_bind(self) -> None:
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self._last_refusal = 0.0
        super().server_bind()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            now = time.monotonic()
            if now - self._last_refusal >= REFUSAL_LOG_SECONDS:
                self._last_refusal = now
                log.warning("metrics endpoint: %d connections open, refusing more", self.max_connections)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _server_class(host: str) -> type[_BoundedServer]:
    family = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]

    class Server(_BoundedServer):
        address_family = family

    return Server


def _requiring(token: str, app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    expected = f"Bearer {token}".encode()

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        given = environ.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")
        if not hmac.compare_digest(given, expected):
            start_response(
                "401 Unauthorized",
                [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Bearer realm="metrics"')],
            )
            return [b"missing or invalid bearer token\n"]
        return app(environ, start_response)

    return guarded


def serve_metrics(
    registry: CollectorRegistry, host: str, port: int, token: str = ""
) -> tuple[WSGIServer, threading.Thread]:
    """Starts the endpoint on a daemon thread; `token` non-empty: scrapes must present it."""
    app = make_wsgi_app(registry)
    if token:
        app = _requiring(token, app)
    server = make_server(host, port, app, _server_class(host), handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    return server, thread
