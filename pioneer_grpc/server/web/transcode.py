"""Unary calls in JSON are turned into binary protobuf, and their answers back, in a worker thread.

The Connect runtime decodes and encodes on the loop it runs on, which is the gRPC
server's: parsing a 15 MB JSON request into protobuf takes about half a second,
and writing a PrepareTurn answer of hundreds of kilobytes as JSON tens of
milliseconds, time in which no call of either edge would move (gRPC's own edge
decodes large messages off the loop, wire.py). So a unary JSON call reaches the
runtime as `application/proto`, which it reads with protobuf's C parser, and its
binary answer is written as JSON in a thread too. What the client sends and gets
is unchanged. A body that does not parse, goes past the size cap, is compressed,
or comes without a known token (or with two authorization headers) reaches
the runtime as it was sent, so its
answer (and the order of the checks: the token before the body) stays the runtime's.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from functools import lru_cache
from typing import Any

from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.message import Message

from pioneer_grpc.server.web.asgi import App, Receive, Scope, Send
from pioneer_grpc.server.web.codec import CompactJSONCodec, check_object
from pioneer_grpc.tenants import Authority

_JSON_TYPES = (b"application/json", b"application/json; charset=utf-8")
_CODEC = CompactJSONCodec()


@lru_cache(maxsize=256)
def message_classes(path: str) -> tuple[type[Message], type[Message]] | None:
    """The request and response classes of `/pioneer.v1.Service/Method`; None for any other path."""
    service_name, _, method_name = path.strip("/").partition("/")
    if not service_name.startswith("pioneer.v1.") or not method_name:
        return None
    try:
        service = descriptor_pool.Default().FindServiceByName(service_name)
    except KeyError:
        return None
    method = service.methods_by_name.get(method_name)
    if method is None or method.client_streaming or method.server_streaming:
        return None
    return (
        message_factory.GetMessageClass(method.input_type),
        message_factory.GetMessageClass(method.output_type),
    )


def to_binary(body: bytes, request_class: type[Message]) -> bytes:
    """The JSON request as binary protobuf (unknown fields ignored, as the runtime's JSON codec does)."""
    check_object(body)
    request = request_class()
    json_format.Parse(body, request, ignore_unknown_fields=True)
    return request.SerializeToString()


def to_json(body: bytes, response_class: type[Message]) -> bytes:
    return _CODEC.encode(response_class.FromString(body))


def _header(scope: Scope, name: bytes) -> bytes | None:
    """The header's value when it is sent once; None when it is missing or sent more than once."""
    found = [bytes(value) for key, value in scope["headers"] if key.lower() == name]
    return found[0] if len(found) == 1 else None


def _typed(headers: Any, content_type: bytes, length: int, *dropped: bytes) -> list[tuple[bytes, bytes]]:
    """`headers` with this content type and length instead of theirs, and without `dropped`."""
    gone = (b"content-type", b"content-length", *dropped)
    kept = [(bytes(k), bytes(v)) for k, v in headers if bytes(k).lower() not in gone]
    return [*kept, (b"content-type", content_type), (b"content-length", str(length).encode())]


def _replaying(body: bytes, receive: Receive) -> Receive:
    """`body` as the whole request, then the client's own messages (its disconnect)."""
    sent = False

    async def replay() -> MutableMapping[str, Any]:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _read(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The whole body, and whether it stayed within `limit` bytes (reading stops past it)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks), False
        if not message.get("more_body", False):
            return b"".join(chunks), True


class JsonInThreads:
    """Wraps the Connect applications: unary JSON in and out through binary, transcoded off the loop."""

    def __init__(self, app: App, authority: Authority | None, max_bytes: int) -> None:
        self._app = app
        self._authority = authority
        self._max_bytes = max_bytes

    def _transcodes(self, scope: Scope) -> tuple[type[Message], type[Message]] | None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return None
        if _header(scope, b"content-type") not in _JSON_TYPES:
            return None
        if _header(scope, b"content-encoding") not in (None, b"identity"):
            return None
        authority = self._authority
        if authority is not None and authority.caller_of(_header(scope, b"authorization") or b"") is None:
            return None
        return message_classes(scope["path"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        classes = self._transcodes(scope)
        if classes is None:
            await self._app(scope, receive, send)
            return
        body, whole = await _read(receive, self._max_bytes)
        try:
            binary = await asyncio.to_thread(to_binary, body, classes[0]) if whole else None
        except (json_format.ParseError, ValueError, UnicodeDecodeError):
            binary = None
        if binary is None:
            await self._app(scope, _replaying(body, receive), send)
            return
        # Without accept-encoding the binary answer comes back uncompressed, ready to transcode.
        headers = _typed(scope["headers"], b"application/proto", len(binary), b"accept-encoding")
        answer = _JsonAnswer(send, classes[1])
        await self._app({**scope, "headers": headers}, _replaying(binary, receive), answer)


class _JsonAnswer:
    """Holds a binary answer until its last byte, then sends it as JSON; errors (JSON already) pass."""

    def __init__(self, send: Send, response_class: type[Message]) -> None:
        self._send = send
        self._class = response_class
        self._start: MutableMapping[str, Any] | None = None
        self._chunks: list[bytes] = []

    async def __call__(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self._start = message
            return
        if message["type"] != "http.response.body" or self._start is None:
            await self._send(message)
            return
        self._chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        start, body = self._start, b"".join(self._chunks)
        headers = list(start.get("headers", []))
        kinds = {bytes(v) for k, v in headers if bytes(k).lower() == b"content-type"}
        if start["status"] == 200 and kinds == {b"application/proto"}:
            body = await asyncio.to_thread(to_json, body, self._class)
            headers = _typed(headers, b"application/json", len(body))
        await self._send({**start, "headers": headers})
        await self._send({"type": "http.response.body", "body": body, "more_body": False})
