"""A loopback HTTP server that records each request and answers like the provider would.

It speaks just enough of each API for the official SDKs to accept the reply:
the smallest valid response of Chat Completions, Responses, Messages,
generateContent and Converse, chosen by the request path.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "fake",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "ok"},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "fake",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "fake",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
GENERATE_CONTENT = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}
    ],
    "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
}

CONVERSE = {
    "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
    "metrics": {"latencyMs": 1},
}


def reply_for(path: str) -> dict[str, Any]:
    if path.endswith("/chat/completions"):
        return CHAT_COMPLETION
    if path.endswith("/responses"):
        return RESPONSE
    if path.endswith("/messages"):
        return MESSAGE
    if ":generateContent" in path:
        return GENERATE_CONTENT
    if path.endswith("/converse"):
        return CONVERSE
    raise KeyError(path)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class RecordingServer:
    base_url: str
    requests: list[Recorded] = field(default_factory=list)

    def last(self) -> Recorded:
        assert self.requests, "the SDK sent nothing"
        return self.requests[-1]


@contextmanager
def recording_server() -> Iterator[RecordingServer]:
    recorder = RecordingServer(base_url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            recorder.requests.append(Recorded("POST", self.path, dict(self.headers.items()), body))
            try:
                reply = json.dumps(reply_for(self.path.split("?")[0])).encode()
                status = 200
            except KeyError:
                reply, status = b'{"error": "unknown path"}', 404
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    recorder.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
