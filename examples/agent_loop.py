"""An agent loop on pioneer-grpc with the Python client: two turns, one with a tool round.

The model is a stand-in that answers from the ChatRequest (call a tool when the
user asks for files, answer once the tool result is there) with a response body of
OpenAI's Responses API; replace `fake_model` with a provider call that POSTs
`prepared.provider_body_json` to `provider_path` and returns the response's JSON.
`entries_of_response` turns that response into the entries to store, its usage and
why the model stopped, whichever of the five provider APIs answered. The tool
returns a screenshot of the folder (a small PNG made here) with its text, as a
browser or computer-use tool would.

    PIONEER_ADDR=127.0.0.1:50051 PIONEER_TOKEN=... python examples/agent_loop.py
"""

from __future__ import annotations

import json
import os
import struct
import sys
import uuid
import zlib
from typing import Any

from pioneer_grpc.client import (
    STOP_TOOL_USE,
    ChatRequest,
    Client,
    Provider,
    ThreadConfig,
    ToolCall,
    chat_role,
    entries_of_response,
    image_part,
    tool,
    tool_result_entry,
    turn_ref,
    user_entry,
)
from pioneer_grpc.v1 import chat_pb2

PROVIDER = Provider.PROVIDER_OPENAI_RESPONSES

TOOLS = [
    tool(
        "list_files",
        "List the files of a folder",
        {"type": "object", "properties": {"folder": {"type": "string"}}, "required": ["folder"]},
    )
]


def fake_model(request: ChatRequest, body_json: str) -> dict[str, Any]:
    """What POST /v1/responses with `body_json` would answer: a function call or a message."""
    last = request.messages[-1]
    if last.role == chat_pb2.CHAT_ROLE_TOOL:
        images = sum(1 for part in last.content_parts if part.HasField("image"))
        output = [_message(f"The folder holds: {last.content} ({images} screenshot).")]
    elif "files" in last.content:
        call_id = f"call_{uuid.uuid4().hex[:8]}"
        output = [
            {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": "list_files",
                "arguments": '{"folder": "."}',
                "status": "completed",
            }
        ]
    else:
        output = [_message(f"You said: {last.content}")]
    # A stand-in's usage: about four characters a token, none of it from the cache.
    usage = {
        "input_tokens": len(body_json) // 4,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": len(body_json) // 4 + 20,
    }
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "status": "completed",
        "model": "gpt-4.1-mini",
        "output": output,
        "usage": usage,
    }


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{uuid.uuid4().hex}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def run_tool(call: ToolCall) -> tuple[str, bytes]:
    """The tool's text and a screenshot of the folder's window."""
    folder = json.loads(call.arguments or "{}").get("folder", ".")
    return (", ".join(sorted(["README.md", "notes.txt"])) if folder == "." else ""), screenshot(64, 48)


def screenshot(width: int, height: int) -> bytes:
    """A white PNG of the size, standing in for what a screenshot tool returns."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\xff" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def run_turn(client: Client, thread_id: str, turn_id: str, text: str) -> str:
    """One user message to a final answer: PrepareTurn per provider round, CompleteTurn with the answer.

    A turn with one tool round is three calls: PrepareTurn (the user's message),
    PrepareTurn (the call and its result), CompleteTurn (the answer). Every round
    sends `tools` again: the server keeps none between rounds.
    """
    new_entries = [user_entry(f"{turn_id}.user", text)]
    usage = None  # the provider's usage of the turn's previous round, handed on with the next call
    for round_number in range(1, 5):
        prepared = client.prepare_turn(
            thread_id=thread_id,
            turn_id=turn_id,
            new_entries=new_entries,
            tools=TOOLS,  # every round: the server keeps no tools between rounds
            # The body to POST to the provider comes back too (provider_body_json, provider_path).
            provider=PROVIDER,
            # Stored with the round before (ListRoundUsage, the console): what the provider's cache
            # served against what the server expected of the body it rendered, and the cost.
            previous_round_usage=usage,
        )
        response = fake_model(prepared.chat_request, prepared.provider_body_json)
        # The model's reply as the entry to store (id f"{turn_id}.r{round_number}": a retried
        # round stores nothing twice), why it stopped, and reply.usage: what the provider
        # counted, cache reads included, in one meaning for every provider (ProviderUsage).
        reply = entries_of_response(PROVIDER, response, turn_id, round_number)
        if reply.stop != STOP_TOOL_USE:
            if not reply.entries:  # a filter, or max_tokens inside the reasoning: nothing to store
                raise RuntimeError(f"turn {turn_id}: the model stopped ({reply.provider_stop_reason})")
            # Stored and completed in one transaction; the same call again is a no-op.
            client.complete_turn(
                thread_id=thread_id, turn_id=turn_id, entries=reply.entries, previous_round_usage=reply.usage
            )
            return reply.entries[0].content
        # A tool round inside the turn: the call and its results (text and screenshot) go in
        # together with the next round; a call sent without its results is refused, stored nowhere.
        results = []
        for call in reply.entries[0].tool_calls:
            text, png = run_tool(call)
            entry_id = f"{turn_id}.r{round_number}.{call.id}"
            results.append(tool_result_entry(entry_id, call, text, parts=[image_part(png)]))
        new_entries = [*reply.entries, *results]
        usage = reply.usage
    raise RuntimeError(f"turn {turn_id} did not finish in 4 rounds")


def main(address: str, token: str | None) -> int:
    thread_id = f"example-{uuid.uuid4().hex[:8]}"
    with Client.connect(address, token=token) as client:
        # Idempotent: a retry after a timeout answers the same thread.
        for _ in range(2):
            client.create_thread(thread_id=thread_id, config=ThreadConfig(model="gpt-4.1-mini"))
        print(run_turn(client, thread_id, "turn-1", "which files are here?"))
        print(run_turn(client, thread_id, "turn-2", "thanks"))
        history = client.load_conversation_history(thread_id=thread_id)
        roles = [chat_pb2.ChatRole.Name(m.role) for m in history.messages]
        print("history:", " ".join(roles))
        assert [chat_role(e.role) for e in client.list_entries(thread_id=thread_id).entries] == [
            m.role for m in history.messages
        ]
        diff = client.diff_manifests(base=turn_ref(thread_id, "turn-1"), target=turn_ref(thread_id, "turn-2"))
        print("stable prefix changed between turns:", diff.stable_changed)
    return 0


if __name__ == "__main__":
    sys.exit(main(os.environ.get("PIONEER_ADDR", "127.0.0.1:50051"), os.environ.get("PIONEER_TOKEN") or None))
