"""One odd model output never poisons a thread: tool call arguments drawn from hostile JSON are each
refused at append (INVALID_ARGUMENT naming the field) or rendered by every provider in every later
round; and what an older version stored is repaired at load, with a diagnostic.

The arguments are generated (a seeded generator, so a failure reproduces): non-finite numbers, numbers
and integers beyond a double's range and past Python's int-string limit, lone and paired surrogate
escapes in keys and values, deep nesting, duplicate keys, mixed with ordinary values.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import grpc
from google.protobuf import struct_pb2

from pioneer_grpc.client import AsyncClient, RpcFailure
from pioneer_grpc.v1 import (
    chat_pb2,
    common_pb2,
    history_pb2,
    history_service_pb2,
    provider_service_pb2,
    turn_service_pb2,
)
from tests.history.rpc import ASSISTANT, TOOL, entry
from tests.history.test_poisoned_threads import store_as_an_older_version_did
from tests.providers.conformance import conformances
from tests.support import decoded
from tests.turn.test_prepare_turn import Client, compile_input

CALLS = 1_000
THREADS = 20
TOOL_NAME = "probe"
# A model of each provider whose JSON decodes the arguments (OpenAI takes them as text).
DECODING_MODELS = {
    provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES: "claude-sonnet-4-5",
    provider_service_pb2.PROVIDER_GEMINI_GENERATE_CONTENT: "gemini-2.5-flash",
}


def probe_tool() -> chat_pb2.ToolDefinition:
    params = struct_pb2.Struct()
    params.update({"type": "object", "properties": {}})
    return chat_pb2.ToolDefinition(name=TOOL_NAME, description="takes anything", parameters=params)


class Hostile:
    """JSON texts, most of them objects, built from hostile pieces."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def number(self) -> str:
        return self.rng.choice(
            [
                "NaN",
                "Infinity",
                "-Infinity",
                "1e999",
                "-1e400",
                "1e-400",
                "-0",
                "0.1",
                "123456789012345678901234567890",
                "9" * self.rng.choice([19, 20, 309, 400, 4301, 5000]),
                str(self.rng.randint(-(2**70), 2**70)),
            ]
        )

    def string(self) -> str:
        return self.rng.choice(
            [
                '"\\ud800"',
                '"\\udfff tail"',
                '"a\\ud83d"',
                '"\\ud83d\\ude00"',
                '"\\u0000"',
                '"plain"',
                '"\\"quoted\\""',
                '"\u00e9\u4e2d"',
            ]
        )

    def value(self, depth: int) -> str:
        kind = self.rng.random()
        if depth > 0 and kind < 0.25:
            return "[" + ",".join(self.value(depth - 1) for _ in range(self.rng.randint(0, 3))) + "]"
        if depth > 0 and kind < 0.5:
            return self.obj(depth - 1)
        if kind < 0.75:
            return self.number()
        if kind < 0.95:
            return self.string()
        return self.rng.choice(["true", "false", "null"])

    def key(self) -> str:
        return self.rng.choice(['"k"', '"k"', '"\\ud800"', '"x"', '"\\ud83d\\ude00"', '"y"'])

    def obj(self, depth: int) -> str:
        # Duplicate keys come from the small key set.
        pairs = [f"{self.key()}:{self.value(depth)}" for _ in range(self.rng.randint(0, 4))]
        return "{" + ",".join(pairs) + "}"

    def arguments(self) -> str:
        roll = self.rng.random()
        if roll < 0.08:
            deep = self.rng.choice([30, 63, 64, 65, 200, 3000])
            return '{"d":' + "[" * deep + "]" * deep + "}"
        if roll < 0.12:
            return self.value(2)  # often not an object
        return self.obj(self.rng.randint(0, 4))


def strict_json(text: str) -> Any:
    """What a strict decoder reads: no NaN or Infinity, finite numbers, valid UTF-8 text."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} in a provider body")

    def finite(number: str) -> float:
        value = float(number)
        assert math.isfinite(value), f"{number[:30]} in a provider body"
        return value

    text.encode("utf-8")  # a lone surrogate fails here
    return json.loads(text, parse_constant=refuse, parse_float=finite, parse_int=finite)


async def render_everywhere(client: AsyncClient, chat: chat_pb2.ChatRequest, call_ids: list[str]) -> None:
    """Every provider renders `chat`: strict JSON, following the provider's rules, holding every call."""
    for provider, conformance in conformances().items():
        reply = await client.render_chat_request(
            provider_service_pb2.RenderChatRequestRequest(provider=provider, chat_request=chat)
        )
        conformance.strict(strict_json(reply.body_json))
        missing = [c for c in call_ids if json.dumps(c) not in reply.body_json]
        assert not missing, (provider, missing[:5])


def call_turn(turn_id: str, call_id: str, arguments: str) -> list[history_pb2.ConversationEntry]:
    return [
        entry(f"u-{turn_id}", turn_id, content=f"call {call_id}"),
        entry(
            f"a-{turn_id}",
            turn_id,
            ASSISTANT,
            content="calling",
            tool_calls=[common_pb2.ToolCall(id=call_id, name=TOOL_NAME, arguments=arguments)],
        ),
        entry(f"r-{turn_id}", turn_id, TOOL, content="done", tool_call_id=call_id, name=TOOL_NAME),
    ]


async def test_hostile_arguments_are_refused_at_append_or_rendered_by_every_provider(server):
    client = Client(server)
    hostile = Hostile(seed=26)
    accepted: dict[str, list[str]] = {}
    refused: list[tuple[str, str]] = []
    for n in range(CALLS):
        thread_id = f"t{n % THREADS}"
        if n < THREADS:
            await client.thread(thread_id, model="claude-sonnet-4-5")
        arguments = hostile.arguments()
        turn_id, call_id = f"turn-{n}", f"call_{n}"
        request = history_service_pb2.AppendEntriesRequest(
            thread_id=thread_id, entries=call_turn(turn_id, call_id, arguments)
        )
        try:
            await client.append_entries(request)
        except RpcFailure as rpc_failure:
            error = decoded(rpc_failure)
            assert error.code == grpc.StatusCode.INVALID_ARGUMENT, (arguments[:80], error.message)
            fields = {field for field, _ in error.violations}
            assert fields == {"entries[1].tool_calls[0].arguments"}, (arguments[:80], error.violations)
            refused.append((arguments, error.violations[0][1]))
            continue
        await client.complete_turn(
            history_service_pb2.CompleteTurnRequest(thread_id=thread_id, turn_id=turn_id)
        )
        accepted.setdefault(thread_id, []).append(call_id)
    print(f"{len(refused)} refused, {sum(map(len, accepted.values()))} accepted; refusals such as:")
    for arguments, why in refused[:: max(1, len(refused) // 8)]:
        print(f"  {arguments[:60]!r}: {why[:100]}")
    # The generator is hostile enough to mean something, and fair enough to let most through.
    assert len(refused) > 200
    assert sum(map(len, accepted.values())) > 200

    # Every later round of every thread: a round for each provider that decodes the arguments,
    # and the loaded history rendered for every provider.
    for thread_id, call_ids in accepted.items():
        for provider, model in DECODING_MODELS.items():
            turn_id = f"round-{provider}"
            reply = await client.prepare_turn(
                turn_service_pb2.PrepareTurnRequest(
                    thread_id=thread_id,
                    turn_id=turn_id,
                    model=model,
                    new_entries=[entry(f"u-{turn_id}", "", content="go on")],
                    compile_input=compile_input(),
                    tools=[probe_tool()],
                    provider=provider,
                )
            )
            conformances()[provider].strict(strict_json(reply.provider_body_json))
            assert [d.code for d in reply.history_report.diagnostics] == []
            await render_everywhere(client, reply.chat_request, call_ids)
            await client.complete_turn(
                history_service_pb2.CompleteTurnRequest(thread_id=thread_id, turn_id=turn_id)
            )


OLDER_ROWS = {
    "c_nan": '{"x": NaN, "y": 1}',
    "c_inf": '{"x": [-Infinity, 2]}',
    "c_big": '{"x": 1e999, "n": ' + "7" * 5000 + "}",
    "c_sur": '{"\\udc00": "a\\ud800b", "ok": "\\ud83d\\ude00"}',
}
REPAIRED = {
    "c_nan": {"x": None, "y": 1},
    "c_inf": {"x": [None, 2]},
    "c_big": {"x": None, "n": None},
    "c_sur": {"\ufffd": "a\ufffdb", "ok": "\U0001f600"},
}


async def test_rows_an_older_version_stored_are_repaired_for_anthropic_and_gemini(pg_server):
    client = Client(pg_server)
    await client.thread("t", model="claude-sonnet-4-5")
    for n, (call_id, arguments) in enumerate(OLDER_ROWS.items()):
        await store_as_an_older_version_did(
            pg_server, "t", f"turn-{n}", *call_turn(f"turn-{n}", call_id, arguments)
        )
    for provider, model in DECODING_MODELS.items():
        turn_id = f"round-{provider}"
        reply = await client.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id="t",
                turn_id=turn_id,
                model=model,
                new_entries=[entry(f"u-{turn_id}", "", content="go on")],
                compile_input=compile_input(),
                tools=[probe_tool()],
                provider=provider,
            )
        )
        diagnostics = [(d.code, d.entry_id) for d in reply.history_report.diagnostics]
        assert diagnostics == [("tool_arguments_repaired", f"a-turn-{n}") for n in range(len(OLDER_ROWS))]
        body = strict_json(reply.provider_body_json)
        conformances()[provider].strict(body)
        sent = {
            call.id: json.loads(call.arguments)
            for message in reply.chat_request.messages
            for call in message.tool_calls
        }
        assert sent == REPAIRED
        await client.complete_turn(history_service_pb2.CompleteTurnRequest(thread_id="t", turn_id=turn_id))
