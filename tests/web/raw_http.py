"""HTTP/1.1 written by hand on raw sockets: requests no client library would send, and connections
left half-way, as a hostile or broken client leaves them."""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from typing import Any


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request_bytes(
    path: str,
    body: bytes = b"",
    host: bytes = b"127.0.0.1",
    headers: list[tuple[bytes, bytes]] | None = None,
    method: bytes = b"POST",
    content_type: bytes = b"application/json",
) -> bytes:
    lines = [method + b" " + path.encode() + b" HTTP/1.1", b"host: " + host]
    if method == b"POST":
        lines += [b"content-type: " + content_type, b"content-length: " + str(len(body)).encode()]
    lines += [name + b": " + value for name, value in headers or []]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def read_answer(reader: asyncio.StreamReader) -> Answer:
    """One response, with a content-length or chunked."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() != "chunked":
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return Answer(int(status_line.split()[1]), headers, body)
    chunks = []
    while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)
    await reader.readexactly(2)
    return Answer(int(status_line.split()[1]), headers, b"".join(chunks))


async def exchange(
    port: int, data: bytes, seconds: float = 10, tls: ssl.SSLContext | None = None, host: str = "127.0.0.1"
) -> Answer:
    """Sends `data` on a new connection and reads one answer, within `seconds` in all."""
    async with asyncio.timeout(seconds):
        reader, writer = await asyncio.open_connection(
            host, port, ssl=tls, server_hostname=host if tls is not None else None
        )
        try:
            writer.write(data)
            await writer.drain()
            return await read_answer(reader)
        finally:
            writer.close()


async def closed_by_server(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Whether the server closes the connection (EOF or reset) within `seconds`, reading what comes."""
    try:
        async with asyncio.timeout(seconds):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return True
