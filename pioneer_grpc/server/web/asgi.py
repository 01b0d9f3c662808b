"""The ASGI app of the HTTP listener: Connect services by path, the console's files otherwise.

The console is plain files shipped in the package (console/): nothing to
build. They hold no data; everything the page shows comes from the Connect
calls, which ask for the bearer token when one is configured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from importlib import resources
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css"}
_HEADERS = [
    (b"cache-control", b"no-cache"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
]


def console_assets() -> dict[str, tuple[bytes, bytes]]:
    """URL path -> (content, content type) of every file of the console; `/` is index.html."""
    assets: dict[str, tuple[bytes, bytes]] = {}
    for item in resources.files("pioneer_grpc.server.web").joinpath("console").iterdir():
        suffix = "." + item.name.rpartition(".")[2]
        if item.is_file() and suffix in _TYPES:
            assets["/" + item.name] = (item.read_bytes(), _TYPES[suffix].encode())
    assets["/"] = assets["/index.html"]
    return assets


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    length = (b"content-length", str(len(body)).encode())
    await send({"type": "http.response.start", "status": status, "headers": [*headers, length]})
    await send({"type": "http.response.body", "body": body})


def one_message_a_turn(send: Send) -> Send:
    """`send` for a streamed answer: after each of its messages the call waits one turn of the loop.

    A server stream (a watch's backlog) would otherwise write all its messages in one turn, and a
    connection its client reset meanwhile is told to uvicorn only on the next turn: every write in
    between reaches a closed socket, and asyncio logs a WARNING for each ("socket.send() raised
    exception.", hundreds for a closed browser tab). With a turn between two messages, the loss
    reaches the call before its next message and ends it; gRPC's edge writes a stream this way too.
    """

    async def sending(message: MutableMapping[str, Any]) -> None:
        await send(message)
        if message.get("more_body", False):
            await asyncio.sleep(0)

    return sending


class WebApp:
    """Routes `/pioneer.v1.<Service>/<Method>` to its Connect application; GETs of console files."""

    def __init__(self, services: dict[str, App], assets: dict[str, tuple[bytes, bytes]]) -> None:
        self._services = services
        self._assets = assets

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        service = self._services.get("/" + path.split("/", 2)[1]) if path.count("/") >= 2 else None
        if service is not None:
            await service(scope, receive, one_message_a_turn(send))
            return
        asset = self._assets.get(path)
        if asset is None:
            await _respond(send, 404, b"not found\n", [(b"content-type", b"text/plain")])
        elif scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, b"", [(b"allow", b"GET, HEAD")])
        else:
            body, kind = asset
            await _respond(
                send, 200, body if scope["method"] == "GET" else b"", [(b"content-type", kind), *_HEADERS]
            )
