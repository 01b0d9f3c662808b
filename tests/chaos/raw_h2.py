"""A gRPC call written as raw HTTP/2 frames, for header bytes no gRPC client library would send.

HPACK literals without indexing or Huffman coding (RFC 7541 6.2.2), one HEADERS
frame and one DATA frame; the answer's frames are read until the stream ends,
and only their types and flags are looked at.
"""

from __future__ import annotations

import asyncio
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x7
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1


def _integer(value: int, prefix_bits: int = 7) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([value])
    out = [limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def _literal(name: bytes, value: bytes) -> bytes:
    return b"\x00" + _integer(len(name)) + name + _integer(len(value)) + value


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


async def call(
    host: str, port: int, path: str, headers: list[tuple[bytes, bytes]], message: bytes = b""
) -> list[tuple[int, int]]:
    """(frame type, flags) of every frame the server sent on the stream or the connection, until it ended."""
    reader, writer = await asyncio.open_connection(host, port)
    block = b"".join(
        _literal(name, value)
        for name, value in [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", path.encode()),
            (b":authority", f"{host}:{port}".encode()),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
            *headers,
        ]
    )
    writer.write(PREFACE + _frame(SETTINGS, 0, 0, b"") + _frame(HEADERS, END_HEADERS, 1, block))
    writer.write(_frame(DATA, END_STREAM, 1, b"\x00" + struct.pack(">I", len(message)) + message))
    await writer.drain()
    seen: list[tuple[int, int]] = []
    try:
        async with asyncio.timeout(10):
            while True:
                head = await reader.readexactly(9)
                length, kind, flags, stream = int.from_bytes(head[:3], "big"), head[3], head[4], head[5:]
                await reader.readexactly(length)
                seen.append((kind, flags))
                if kind == SETTINGS and not flags & ACK:
                    writer.write(_frame(SETTINGS, ACK, 0, b""))
                ended = kind == HEADERS and flags & END_STREAM and stream != b"\x00\x00\x00\x00"
                if ended or kind in (RST_STREAM, GOAWAY):
                    return seen
    except asyncio.IncompleteReadError:
        return seen
    finally:
        writer.close()
