"""A stand-in for an OpenAI-compatible endpoint: real HTTP/1.1 on 127.0.0.1, port 0.

`reply` decides each answer: (status, JSON body) or a number of seconds to
stall, then answer "late"; a stall ends early, without an answer, when the
client hangs up. Every request body is kept, so tests can count calls and read prompts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Reply = Callable[[dict[str, Any]], "tuple[int, Any] | float"]


def completion(text: str) -> tuple[int, Any]:
    return 200, {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }


@dataclass
class FakeOpenAI:
    reply: Reply = field(default=lambda body: completion("A short summary."))
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    _server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def start(self) -> FakeOpenAI:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            pairs = (line.partition(":") for line in lines[1:] if line)
            headers = {k.strip().lower(): v.strip() for k, _, v in pairs}
            body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))))
            self.requests.append(body)
            self.headers.append(headers)
            answer = self.reply(body)
            if isinstance(answer, float | int) and not isinstance(answer, bool):
                if await _hangs_up_within(reader, answer):
                    return
                answer = completion("late")
            status, payload = answer
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            writer.write(
                f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"
                f"connection: close\r\n\r\n".encode()
                + data
            )
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def _hangs_up_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True when the client closes the connection within `seconds` (it sends nothing after its request)."""
    try:
        async with asyncio.timeout(seconds):
            await reader.read()
    except TimeoutError:
        return False
    return True
