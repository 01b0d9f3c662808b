"""A stand-in for Anthropic's and Gemini's count-tokens endpoints: real HTTP/1.1 on 127.0.0.1, port 0.

It answers in each provider's shape (`{"input_tokens": N}` on
/v1/messages/count_tokens, `{"totalTokens": N}` on /v1beta/models/M:countTokens),
counting a text as its number of characters divided by `chars_per_token`, or
with `fail` (status, body), or not at all for `hang_seconds`. It checks what a
real endpoint checks: the API key header, anthropic-version, the body's shape
(401/400 otherwise). Every request's path, headers and body are kept.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeCounter:
    chars_per_token: int = 3
    fail: tuple[int, Any] | None = None
    hang_seconds: float = 0.0
    api_key: str = "test-key"
    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    _server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def start(self) -> FakeCounter:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, Any]:
        if self.fail is not None:
            return self.fail
        if path == "/v1/messages/count_tokens":
            if headers.get("x-api-key") != self.api_key or not headers.get("anthropic-version"):
                return 401, {"type": "error", "error": {"type": "authentication_error"}}
            if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
                return 400, {"type": "error", "error": {"type": "invalid_request_error"}}
            text = body["messages"][0]["content"]
            return 200, {"input_tokens": len(text) // self.chars_per_token}
        if path.startswith("/v1beta/models/") and path.endswith(":countTokens"):
            if headers.get("x-goog-api-key") != self.api_key:
                return 403, {"error": {"code": 403, "status": "PERMISSION_DENIED"}}
            if not isinstance(body.get("contents"), list):
                return 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT"}}
            text = body["contents"][0]["parts"][0]["text"]
            return 200, {"totalTokens": len(text) // self.chars_per_token}
        return 404, {"error": {"message": f"no route {path}"}}

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            pairs = (line.partition(":") for line in lines[1:] if line)
            headers = {k.strip().lower(): v.strip() for k, _, v in pairs}
            body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))))
            self.requests.append((path, headers, body))
            if self.hang_seconds:
                await asyncio.sleep(self.hang_seconds)
            status, payload = self._answer(path, headers, body)
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
