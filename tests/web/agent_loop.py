"""A two-turn agent loop over gRPC, as a person's loop would run it (the test plays the model).

Turn 1 asks for the weather: round 1 sends the question, the model calls
get_weather, round 2 sends the call and its result, the model answers. Then
SOUL.md is edited, and turn 2's first round compiles a changed soul_core: the
provider's prefix cache breaks there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.protobuf import struct_pb2

from pioneer_grpc.client import AsyncClient, ConnectOptions, user_entry
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.v1 import (
    chat_pb2,
    common_pb2,
    history_pb2,
    prompt_pb2,
    provider_service_pb2,
    turn_service_pb2,
)

THREAD = "weather-desk"
MODEL = "claude-sonnet-4-5"


def weather_tool() -> chat_pb2.ToolDefinition:
    params = struct_pb2.Struct()
    params.update({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    return chat_pb2.ToolDefinition(name="get_weather", description="Weather for a city", parameters=params)


def tool_round_entries(turn_id: str, city: str, result: str) -> list[history_pb2.ConversationEntry]:
    call = common_pb2.ToolCall(id=f"{turn_id}-call", name="get_weather", arguments=f'{{"city":"{city}"}}')
    return [
        history_pb2.ConversationEntry(
            entry_id=f"{turn_id}-a1", role=history_pb2.ENTRY_ROLE_ASSISTANT, tool_calls=[call]
        ),
        history_pb2.ConversationEntry(
            entry_id=f"{turn_id}-r1",
            role=history_pb2.ENTRY_ROLE_TOOL,
            tool_call_id=call.id,
            name="get_weather",
            content=result,
        ),
    ]


@dataclass
class AgentLoop:
    channel: grpc.aio.Channel
    metadata: tuple[tuple[str, str], ...]
    home: Path
    requests: list[turn_service_pb2.PrepareTurnRequest] = field(default_factory=list)
    replies: list[turn_service_pb2.PrepareTurnResponse] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The Python client over the caller's channel (the caller closes it); the token in `metadata`.
        self.client = AsyncClient(self.channel, ConnectOptions())

    async def round(
        self, turn_id: str, entries: list[history_pb2.ConversationEntry], date: str = "2026-12-01"
    ) -> turn_service_pb2.PrepareTurnResponse:
        request = turn_service_pb2.PrepareTurnRequest(
            thread_id=THREAD,
            turn_id=turn_id,
            new_entries=entries,
            compile_input=prompt_pb2.PromptCompileInput(
                profile=prompt_pb2.PROMPT_PROFILE_FULL, extra_system=f"Date: {date}"
            ),
            tools=[weather_tool()],
            provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
        )
        reply = await self.client.prepare_turn(request, metadata=self.metadata)
        self.requests.append(request)
        self.replies.append(reply)
        return reply

    async def finish(self, turn_id: str, answer: str) -> None:
        final = history_pb2.ConversationEntry(
            entry_id=f"{turn_id}-a2", turn_id=turn_id, role=history_pb2.ENTRY_ROLE_ASSISTANT, content=answer
        )
        await self.client.append_entries(thread_id=THREAD, entries=[final], metadata=self.metadata)
        await self.client.complete_turn(thread_id=THREAD, turn_id=turn_id, metadata=self.metadata)

    async def two_turns(self) -> None:
        """Turn 1 with a tool round, SOUL.md edited, turn 2's first round (on a home holding Pioneer's
        SOUL.md and IDENTITY.md, as `serve`'s first run at its default home leaves them)."""
        ensure_bootstrap_files(self.home)
        await self.client.create_thread(
            thread_id=THREAD, config=history_pb2.ThreadConfig(model=MODEL), metadata=self.metadata
        )
        await self.round("turn-1", [user_entry("turn-1-u", "What's the weather in Oslo?")])
        await self.round("turn-1", tool_round_entries("turn-1", "Oslo", "4°C, light rain"))
        await self.finish("turn-1", "It is 4°C with light rain in Oslo.")
        soul = self.home / "SOUL.md"
        soul.write_text(soul.read_text() + "\nAlways give temperatures in both Celsius and Fahrenheit.\n")
        await self.round("turn-2", [user_entry("turn-2-u", "And in Bergen?")])

    async def live_round(self) -> turn_service_pb2.PrepareTurnResponse:
        """Turn 2's tool round, on a new date: a new manifest event of the turn."""
        return await self.round(
            "turn-2", tool_round_entries("turn-2", "Bergen", "7°C, wind"), date="2026-12-02"
        )
