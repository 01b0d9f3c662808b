"""Connect protocol calls over HTTP/JSON, written out by hand: what curl and a browser send."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2

# Connect streaming envelope flags.
END_STREAM = 0x02


def headers(token: str = "", **extra: str) -> dict[str, str]:
    found = {"content-type": "application/json", **extra}
    if token:
        found["authorization"] = f"Bearer {token}"
    return found


async def unary(
    client: httpx.AsyncClient, path: str, request: Message | dict[str, Any], token: str = "", **extra: str
) -> httpx.Response:
    body = request if isinstance(request, dict) else json_format.MessageToDict(request)
    return await client.post(path, json=body, headers=headers(token, **extra))


def parsed(response: httpx.Response, message: Message) -> Message:
    assert response.status_code == 200, response.text
    return json_format.Parse(response.text, message)


def reasons(error: dict[str, Any]) -> list[str]:
    """The ErrorInfo reasons a Connect error's details carry."""
    found = []
    for detail in error.get("details", []):
        if detail["type"] == "google.rpc.ErrorInfo":
            value = detail["value"] + "=" * (-len(detail["value"]) % 4)
            found.append(error_details_pb2.ErrorInfo.FromString(base64.b64decode(value)).reason)
    return found


def envelope(payload: dict[str, Any], flags: int = 0) -> bytes:
    data = json.dumps(payload).encode()
    return bytes([flags]) + len(data).to_bytes(4, "big") + data


async def stream(
    client: httpx.AsyncClient, path: str, request: dict[str, Any], token: str = ""
) -> AsyncIterator[tuple[int, dict[str, Any]]]:
    """(flags, JSON) of each envelope of a server stream, the end-of-stream one last."""
    sent = headers(token, **{"content-type": "application/connect+json"})
    async with client.stream("POST", path, content=envelope(request), headers=sent) as response:
        assert response.status_code == 200, await response.aread()
        pending = b""
        async for chunk in response.aiter_bytes():
            pending += chunk
            while len(pending) >= 5 and len(pending) >= 5 + int.from_bytes(pending[1:5], "big"):
                size = int.from_bytes(pending[1:5], "big")
                flags, data, pending = pending[0], pending[5 : 5 + size], pending[5 + size :]
                yield flags, json.loads(data)
                if flags & END_STREAM:
                    return
