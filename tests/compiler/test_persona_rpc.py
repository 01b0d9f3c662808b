"""The persona through a running server: CompilePrompt and PrepareTurn carry it to the provider body."""

from __future__ import annotations

import json

import grpc

from pioneer_grpc.compiler.render import policies
from pioneer_grpc.config import CONFIGURED_PERSONA_SOURCE
from pioneer_grpc.v1 import history_pb2, prompt_pb2, provider_service_pb2, turn_service_pb2
from pioneer_grpc.v1 import prompt_compiler_service_pb2 as pb
from tests.support import failure

SCOUT = "You are Scout, a browser agent that files expense reports for the finance team."


def identity_text(payload: prompt_pb2.CompiledPromptPayload) -> str | None:
    found = [s.content for s in payload.sections if s.id == "identity_base"]
    return found[0] if found else None


async def compile_on(server, compile_input: prompt_pb2.PromptCompileInput) -> pb.CompilePromptResponse:
    client = await server.client()
    return await client.compile_prompt(input=compile_input)


async def prepare_on(
    server, thread_id: str, compile_input: prompt_pb2.PromptCompileInput
) -> turn_service_pb2.PrepareTurnResponse:
    client = await server.client()
    await client.create_thread(
        thread_id=thread_id, config=history_pb2.ThreadConfig(model="claude-sonnet-4-5")
    )
    return await client.prepare_turn(
        thread_id=thread_id,
        turn_id="turn-1",
        new_entries=[
            history_pb2.ConversationEntry(entry_id="u1", role=history_pb2.ENTRY_ROLE_USER, content="Hi")
        ],
        compile_input=compile_input,
        provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
    )


async def test_the_configured_persona_reaches_compile_prompt_and_prepare_turn(server_factory) -> None:
    server = await server_factory(persona=SCOUT)
    compiled = await compile_on(server, prompt_pb2.PromptCompileInput())
    assert compiled.payload.stable_system_text.startswith(f"## Identity\n{SCOUT}\n\n## Safety\n")
    assert policies.IDENTITY_BASE not in compiled.payload.full_system_text
    (section,) = [s for s in compiled.payload.sections if s.id == "identity_base"]
    assert list(section.sources) == [CONFIGURED_PERSONA_SOURCE]
    reply = await prepare_on(server, "t-scout", prompt_pb2.PromptCompileInput())
    prompt = reply.chat_request.compiled_prompt
    assert identity_text(prompt) == SCOUT
    assert prompt.manifest.fingerprint_stable == compiled.payload.manifest.fingerprint_stable
    body = json.loads(reply.provider_body_json)
    assert body["system"][0]["text"].startswith(f"## Identity\n{SCOUT}\n")


async def test_a_request_replaces_or_omits_the_servers_persona(server_factory) -> None:
    server = await server_factory(persona=SCOUT)
    own = prompt_pb2.PromptCompileInput(persona="You are Ledger.")
    assert identity_text((await compile_on(server, own)).payload) == "You are Ledger."
    reply = await prepare_on(server, "t-own", own)
    assert identity_text(reply.chat_request.compiled_prompt) == "You are Ledger."
    assert json.loads(reply.provider_body_json)["system"][0]["text"].startswith(
        "## Identity\nYou are Ledger.\n"
    )
    omitted = prompt_pb2.PromptCompileInput(omit_persona=True)
    assert identity_text((await compile_on(server, omitted)).payload) is None
    reply = await prepare_on(server, "t-none", omitted)
    assert reply.chat_request.compiled_prompt.stable_system_text.startswith("## Safety\n")
    assert SCOUT not in reply.provider_body_json


async def test_the_default_server_keeps_the_seed_persona(server) -> None:
    compiled = await compile_on(server, prompt_pb2.PromptCompileInput())
    assert identity_text(compiled.payload) == policies.IDENTITY_BASE


async def test_replicas_with_homes_at_different_paths_share_the_stable_fingerprint(
    server_factory, tmp_path
) -> None:
    first = await server_factory(home=tmp_path / "a" / "home", seed_bootstrap_files=True)
    second = await server_factory(
        home=tmp_path / "replica-two" / "srv" / ".pioneer", seed_bootstrap_files=True
    )
    one = (await compile_on(first, prompt_pb2.PromptCompileInput())).payload
    two = (await compile_on(second, prompt_pb2.PromptCompileInput())).payload
    assert "### SOUL.md (~/.pioneer/SOUL.md)" in one.stable_system_text
    assert one.stable_system_text.encode() == two.stable_system_text.encode()
    assert one.manifest.fingerprint_stable == two.manifest.fingerprint_stable
    # The same prompt: only the paths read on each machine differ.
    assert replace_paths(one, first.home) == replace_paths(two, second.home)


def replace_paths(payload: prompt_pb2.CompiledPromptPayload, home) -> bytes:
    copy = prompt_pb2.CompiledPromptPayload()
    copy.CopyFrom(payload)
    for entry in copy.manifest.source_manifest:
        entry.path = entry.path.replace(str(home.resolve()), "{HOME}")
    for diagnostic in copy.manifest.diagnostics:
        diagnostic.file = diagnostic.file.replace(str(home.resolve()), "{HOME}")
    for section in copy.sections:
        section.sources[:] = [s.replace(str(home.resolve()), "{HOME}") for s in section.sources]
    return copy.SerializeToString(deterministic=True)


async def test_persona_caps_through_the_server(server) -> None:
    over = prompt_pb2.PromptCompileInput(persona="x" * 50_001)
    compiled = await failure(compile_on(server, over))
    assert compiled.code == grpc.StatusCode.INVALID_ARGUMENT
    assert compiled.violations == [("input.persona", "at most 50,000 characters (got 50,001)")]
    both = prompt_pb2.PromptCompileInput(persona="You are Ledger.", omit_persona=True)
    prepared = await failure(prepare_on(server, "t-bad", both))
    assert prepared.code == grpc.StatusCode.INVALID_ARGUMENT
    assert prepared.violations == [("compile_input.omit_persona", "cannot be set together with persona")]


async def test_a_team_persona_round_carries_none_of_pioneers_seeded_text(server_factory, tmp_path) -> None:
    """Pioneer's SOUL.md and IDENTITY.md seeded in the home: a request's persona, and a server's, leave
    them out of the round's prompt and its provider body; no turn reports USER.md missing."""
    from pioneer_grpc.compiler.seed import IDENTITY_SEED, SOUL_SEED

    seeded = [line for line in (SOUL_SEED + IDENTITY_SEED).splitlines() if line.strip()]
    by_request = await server_factory(home=tmp_path / "a", seed_bootstrap_files=True)
    by_server = await server_factory(home=tmp_path / "b", seed_bootstrap_files=True, persona=SCOUT)
    for server, compile_input in (
        (by_request, prompt_pb2.PromptCompileInput(persona=SCOUT)),
        (by_server, prompt_pb2.PromptCompileInput()),
    ):
        assert (server.home / "SOUL.md").exists()
        reply = await prepare_on(server, "t-team", compile_input)
        body = json.loads(reply.provider_body_json)
        assert [line for line in seeded if line in reply.provider_body_json] == []
        assert body["system"]
        assert {"soul_core", "identity_core"}.isdisjoint(reply.manifest.section_ids)
        assert [d.code for d in reply.manifest.diagnostics] == []
        assert SCOUT in reply.chat_request.compiled_prompt.stable_system_text
