"""What every HTTP request meets before anything else: an allowed Host, and headers that are UTF-8.

A page on another name that resolves to this server (DNS rebinding) sends its
own name as the Host: the request is refused (421) before routing, auth or the
console's files, whatever the token setting. The allowed names default to the
--http-listen host and the localhost names; "*.example.com" allows a domain's
names, "*" any. Then a header value that is not UTF-8 is refused (400) here,
where the Connect runtime would answer 500 with a traceback. Each refusal is
one access line and a count (`pioneer_http_requests_refused_total`); the body
is a Connect error, so Connect clients read the message.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable

from pioneer_grpc.server.methods import logged_name
from pioneer_grpc.server.web.asgi import App, Receive, Scope, Send
from pioneer_grpc.telemetry import Telemetry

access_log = logging.getLogger("pioneer_grpc.access")

HOST_NOT_ALLOWED = "HOST_NOT_ALLOWED"
NON_UTF8_HEADER = "NON_UTF8_HEADER"
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
_WILDCARD_ADDRESSES = ("", "0.0.0.0", "::")


def default_allowed_hosts(listen: str) -> tuple[str, ...]:
    """The localhost names and the host of `listen` (HOST:PORT), unless it is a wildcard address."""
    host = listen.rpartition(":")[0].strip("[]").lower()
    extra = () if host in _WILDCARD_ADDRESSES or host in LOCAL_NAMES else (host,)
    return (*LOCAL_NAMES, *extra)


def listens_everywhere(listen: str) -> bool:
    return listen.rpartition(":")[0].strip("[]") in _WILDCARD_ADDRESSES


def host_name(value: str) -> str:
    """The name of a Host header value: without its port, brackets or trailing dot, lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else ""
    name, colon, port = value.rpartition(":")
    if colon and ":" not in name and port.isdigit():
        value = name
    return value[:-1] if value.endswith(".") else value


class AllowedHosts:
    def __init__(self, patterns: Iterable[str]) -> None:
        patterns = list(patterns)
        self.any = "*" in patterns
        self._names = frozenset(p for p in patterns if not p.startswith("*."))
        self._domains = tuple(p[1:] for p in patterns if p.startswith("*."))  # ".example.com"

    def allows(self, host: bytes | None) -> bool:
        if self.any:
            return True
        if host is None:
            return False
        try:
            name = host_name(host.decode("ascii"))
        except UnicodeDecodeError:
            return False
        return name in self._names or (bool(name) and name.endswith(self._domains))


def _header_values(scope: Scope, name: bytes) -> list[bytes]:
    return [bytes(v) for k, v in scope["headers"] if bytes(k).lower() == name]


def _all_utf8(scope: Scope) -> bool:
    try:
        for _, value in scope["headers"]:
            bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Gate:
    """Wraps the whole app: the Host check, then the headers' encoding, then the app."""

    def __init__(self, app: App, hosts: AllowedHosts, telemetry: Telemetry, known: frozenset[str]) -> None:
        self._app = app
        self._hosts = hosts
        self._telemetry = telemetry
        self._known = known

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        hosts = _header_values(scope, b"host")
        if len(hosts) > 1 or not self._hosts.allows(hosts[0] if hosts else None):
            await self._refuse(
                scope,
                send,
                started,
                421,
                "permission_denied",
                HOST_NOT_ALLOWED,
                "this server does not answer for the host this request names (the Host header); "
                "its operator allows names with --http-allowed-host",
            )
            return
        if not _all_utf8(scope):
            await self._refuse(
                scope,
                send,
                started,
                400,
                "invalid_argument",
                NON_UTF8_HEADER,
                "a header value is not valid UTF-8",
            )
            return
        await self._app(scope, receive, send)

    async def _refuse(
        self, scope: Scope, send: Send, started: float, status: int, code: str, reason: str, message: str
    ) -> None:
        body = json.dumps({"code": code, "message": message}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"x-content-type-options", b"nosniff"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
        self._telemetry.metrics.http_request_refused(reason)
        method = logged_name(str(scope.get("path", "")), self._known)
        grpc_code = code.upper()
        elapsed_ms = (time.perf_counter() - started) * 1000
        access_log.info(
            "rpc %s code=%s duration_ms=%.1f protocol=connect status=%d reason=%s",
            method,
            grpc_code,
            elapsed_ms,
            status,
            reason,
            extra={
                "method": method,
                "code": grpc_code,
                "duration_ms": round(elapsed_ms, 1),
                "reason": reason,
            },
        )
