"""Over-long values, NUL characters and over-full lists, sent through the real RPCs on both backends.

Each case must be INVALID_ARGUMENT naming the field (and the cap), with nothing stored,
on SQLite and on PostgreSQL alike: before caps, NUL and over-long ids were accepted on
SQLite and INTERNAL on PostgreSQL, and deep tool-call arguments were INTERNAL.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest

from pioneer_grpc.caps import NUL_PROBLEM
from pioneer_grpc.caps.history import MAX_ENTRIES_PER_APPEND, MAX_ID_CHARS
from pioneer_grpc.caps.prompt import MAX_MANIFEST_SECTIONS
from pioneer_grpc.client import AsyncClient
from pioneer_grpc.v1 import (
    chat_pb2,
    manifest_service_pb2,
    prompt_compiler_service_pb2,
    prompt_pb2,
    provider_service_pb2,
    turn_service_pb2,
)
from pioneer_grpc.v1 import history_service_pb2 as pb

from ..history.rpc import config, entry, failure, tool_call

THREAD = "t-caps"
LONG_ID = "x" * (MAX_ID_CHARS + 1)
DEEP = "[" * 100_000
Call = Callable[[AsyncClient], Awaitable[Any]]


def _append(*entries) -> Call:
    return lambda c: c.append_entries(pb.AppendEntriesRequest(thread_id=THREAD, entries=entries))


def _chat(message: chat_pb2.ChatMessage, provider: int) -> Call:
    request = chat_pb2.ChatRequest(
        model="m", messages=[chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="hi"), message]
    )
    return lambda c: c.render_chat_request(
        provider_service_pb2.RenderChatRequestRequest(provider=provider, chat_request=request)
    )


def _manifest(sections: int) -> prompt_pb2.PromptManifest:
    return prompt_pb2.PromptManifest(
        section_fingerprints=[
            prompt_pb2.SectionFingerprint(section_id=f"s{i}", fingerprint="f") for i in range(sections)
        ]
    )


def _diff(sections: int) -> Call:
    ref = manifest_service_pb2.ManifestRef(manifest=_manifest(sections))
    return lambda c: c.diff_manifests(manifest_service_pb2.DiffManifestsRequest(base=ref, target=ref))


def _compile(**fields) -> Call:
    request = prompt_compiler_service_pb2.CompilePromptRequest(input=prompt_pb2.PromptCompileInput(**fields))
    return lambda c: c.compile_prompt(request)


ASSISTANT_DEEP = chat_pb2.ChatMessage(
    role=chat_pb2.CHAT_ROLE_ASSISTANT, tool_calls=[tool_call("c1", arguments=DEEP)]
)

CASES = {
    "NUL in a thread id": (
        lambda c: c.create_thread(pb.CreateThreadRequest(thread_id="a\x00b")),
        ("thread_id", NUL_PROBLEM),
    ),
    "NUL in content": (_append(entry("e1", "u1", content="a\x00b")), ("entries[0].content", NUL_PROBLEM)),
    "NUL in an entry id": (_append(entry("e\x001", "u1")), ("entries[0].entry_id", NUL_PROBLEM)),
    "a model name over 200 chars": (
        lambda c: c.create_thread(pb.CreateThreadRequest(config=config(model="m" * 201))),
        ("config.model", "at most 200 characters (got 201)"),
    ),
    "a tool_call_id over 200 chars": (
        _append(entry("e1", "u1", role=3, tool_call_id=LONG_ID, name="read_file")),
        ("entries[0].tool_call_id", "at most 200 characters (got 201)"),
    ),
    "deep tool-call arguments in an append": (
        _append(entry("e1", "u1", role=2, tool_calls=[tool_call("c1", arguments=DEEP)])),
        ("entries[0].tool_calls[0].arguments", "JSON nested at most 64 levels deep"),
    ),
    "too many entries in one append": (
        _append(*[entry(f"e{i}", "u1") for i in range(MAX_ENTRIES_PER_APPEND + 1)]),
        ("entries", f"at most {MAX_ENTRIES_PER_APPEND} items (got {MAX_ENTRIES_PER_APPEND + 1})"),
    ),
    "deep tool-call arguments for Anthropic": (
        _chat(ASSISTANT_DEEP, provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES),
        ("chat_request.messages[1].tool_calls[0].arguments", "JSON nested at most 64 levels deep"),
    ),
    "deep tool-call arguments for Gemini": (
        _chat(ASSISTANT_DEEP, provider_service_pb2.PROVIDER_GEMINI_GENERATE_CONTENT),
        ("chat_request.messages[1].tool_calls[0].arguments", "JSON nested at most 64 levels deep"),
    ),
    "a 15,000-level thread folder": (
        _compile(agents_md=prompt_pb2.AgentsMdSource(thread_folder="d/" * 15_000)),
        ("input.agents_md.thread_folder", "at most 1,024 characters (got 30,000)"),
    ),
    "NUL in a dynamic section": (
        _compile(dynamic_sections=[prompt_pb2.DynamicSection(id="x", content="\x00")]),
        ("input.dynamic_sections[0].content", NUL_PROBLEM),
    ),
    "an inline manifest of 100,000 sections": (
        _diff(100_000),
        ("base.manifest.section_fingerprints", f"at most {MAX_MANIFEST_SECTIONS} items (got 100,000)"),
    ),
    "NUL in a turn id of PrepareTurn": (
        lambda c: c.prepare_turn(turn_service_pb2.PrepareTurnRequest(thread_id=THREAD, turn_id="\x00")),
        ("turn_id", NUL_PROBLEM),
    ),
    "a PrepareTurn model over 200 chars": (
        lambda c: c.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(thread_id=THREAD, turn_id="u1", model="m" * 201)
        ),
        ("model", "at most 200 characters (got 201)"),
    ),
    "too many texts to count": (
        lambda c: c.count_tokens(pb.CountTokensRequest(texts=["a"] * 1_001)),
        ("texts", "at most 1,000 items (got 1,001)"),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_over_cap_and_nul_are_invalid_argument_on_both_backends(pg_server, case: str) -> None:
    client = await pg_server.client()
    await client.create_thread(pb.CreateThreadRequest(thread_id=THREAD, config=config(model="m")))
    call, violation = CASES[case]
    failed = await failure(call(client))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT, failed.message
    assert violation in failed.violations
    thread = await client.get_thread(pb.GetThreadRequest(thread_id=THREAD))
    assert thread.thread.entry_count == 0
