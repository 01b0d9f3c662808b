"""PromptCompilerService end to end through the real server (loopback, ephemeral port), called with the
Python client."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import grpc
import pytest

from pioneer_grpc.compiler import compile_prompt
from pioneer_grpc.v1 import prompt_compiler_service_pb2 as pb
from pioneer_grpc.v1 import prompt_pb2
from tests.support import failure

from .inputs import full_profile_input, write_home


def resolved(path: Path) -> Path:
    return Path(os.path.realpath(path))


def odd_workspace(home: Path) -> None:
    """A FIFO named SOUL.md and a 2 GB sparse IDENTITY.md under home/odd."""
    workspace = home / "odd"
    workspace.mkdir()
    os.mkfifo(workspace / "SOUL.md")
    with open(workspace / "IDENTITY.md", "wb") as handle:
        handle.truncate(2 * 1024**3)


async def test_compile_prompt_returns_what_the_core_compiles(server) -> None:
    home = Path(server.home)
    write_home(home)
    request = full_profile_input()
    response = await (await server.client()).compile_prompt(input=request)
    local = compile_prompt(request, [home])
    assert response.payload.SerializeToString(deterministic=True) == local.SerializeToString(
        deterministic=True
    )
    assert response.manifest_event_id == 0
    assert list(response.payload.manifest.section_ids)[:3] == [
        "identity_base",
        "assistant_safety",
        "soul_core",
    ]


async def test_compile_prompt_reads_the_seeded_bootstrap_files(seeded_server) -> None:
    server = seeded_server
    response = await (await server.client()).compile_prompt()
    soul = [s for s in response.payload.sections if s.id == "soul_core"]
    assert len(soul) == 1
    assert soul[0].content.startswith("### SOUL.md (~/.pioneer/SOUL.md)\nSOUL: who you are")
    assert list(soul[0].sources) == [f"{resolved(server.home)}/SOUL.md"]
    assert [d.code for d in response.payload.manifest.diagnostics] == []  # USER.md is optional


async def test_manifest_is_persisted_when_thread_and_turn_are_set(server) -> None:
    request = pb.CompilePromptRequest(
        input=prompt_pb2.PromptCompileInput(dynamic_context="ctx"), thread_id="thr_rpc", turn_id="turn_1"
    )
    client = await server.client()
    response = await client.compile_prompt(request)
    assert response.manifest_event_id > 0
    manifest = response.payload.manifest
    assert (manifest.thread_id, manifest.turn_id) == ("thr_rpc", "turn_1")
    stored = await client.get_turn_manifest(thread_id="thr_rpc", turn_id="turn_1")
    assert stored.manifest == manifest


async def test_thread_id_without_turn_id_is_invalid_argument(server) -> None:
    request = pb.CompilePromptRequest(thread_id="thr_only")
    failed = await failure((await server.client()).compile_prompt(request))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failed.violations == [("turn_id", "thread_id and turn_id are set together or not at all")]
    assert failed.message == "turn_id: thread_id and turn_id are set together or not at all"


async def test_bad_input_is_invalid_argument_with_one_violation_per_field(server) -> None:
    request = pb.CompilePromptRequest(
        input=prompt_pb2.PromptCompileInput(
            profile=12,
            limits=prompt_pb2.PromptLimits(max_chars_per_file=-1),
            dynamic_sections=[
                prompt_pb2.DynamicSection(id="ok", content="x"),
                prompt_pb2.DynamicSection(id="agents_md", content="x"),
                prompt_pb2.DynamicSection(id="two words", content="x"),
            ],
        )
    )
    failed = await failure((await server.client()).compile_prompt(request))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failed.violations == [
        (
            "input.profile",
            "unknown value 12; expected one of PROMPT_PROFILE_UNSPECIFIED, PROMPT_PROFILE_FULL, "
            "PROMPT_PROFILE_MINIMAL, PROMPT_PROFILE_NONE",
        ),
        ("input.limits.max_chars_per_file", "must not be negative"),
        ("input.dynamic_sections[1].id", "collides with the built-in section id 'agents_md'"),
        ("input.dynamic_sections[2].id", "must not contain whitespace"),
    ]


@pytest.mark.parametrize("root", ["..", "../../etc", "/etc", "/"])
async def test_workspace_root_outside_the_home_is_permission_denied(server, root: str) -> None:
    request = pb.CompilePromptRequest(input=prompt_pb2.PromptCompileInput(workspace_root=root))
    failed = await failure((await server.client()).compile_prompt(request))
    assert failed.code == grpc.StatusCode.PERMISSION_DENIED
    assert failed.message.startswith(f"input.workspace_root: {root!r} resolves to ")
    assert failed.violations == []


async def test_fifo_and_huge_file_do_not_stall_the_server(server) -> None:
    odd_workspace(Path(server.home))
    request = pb.CompilePromptRequest(input=prompt_pb2.PromptCompileInput(workspace_root="odd"))
    client = await server.client()
    calls = [client.compile_prompt(request, timeout=10) for _ in range(8)]
    responses = await asyncio.gather(*calls)
    codes = [d.code for d in responses[0].payload.manifest.diagnostics]
    # The sparse file is all NUL bytes: they reach the prompt as U+FFFD, with a diagnostic.
    assert codes == ["file_read_error", "file_truncated", "file_control_characters"]
    assert len({r.SerializeToString(deterministic=True) for r in responses}) == 1


async def test_ensure_bootstrap_files_creates_only_what_is_missing(seeded_server) -> None:
    server = seeded_server
    compiler = await server.client()
    home = Path(server.home)
    at_home = await compiler.ensure_bootstrap_files()
    assert [(f.name, f.path, f.created) for f in at_home.files] == [
        ("SOUL.md", str(resolved(home) / "SOUL.md"), False),
        ("IDENTITY.md", str(resolved(home) / "IDENTITY.md"), False),
    ]
    (home / "ws").mkdir()
    (home / "ws" / "SOUL.md").write_bytes(b"")
    first = await compiler.ensure_bootstrap_files(workspace_root="ws")
    assert [(f.name, f.created) for f in first.files] == [("SOUL.md", False), ("IDENTITY.md", True)]
    assert (home / "ws" / "SOUL.md").read_bytes() == b""
    second = await compiler.ensure_bootstrap_files(workspace_root="ws")
    assert [f.created for f in second.files] == [False, False]


async def test_ensure_bootstrap_files_outside_the_home_is_permission_denied(server) -> None:
    request = pb.EnsureBootstrapFilesRequest(workspace_root="../elsewhere")
    failed = await failure((await server.client()).ensure_bootstrap_files(request))
    assert failed.code == grpc.StatusCode.PERMISSION_DENIED
    assert failed.message.startswith("workspace_root: '../elsewhere' resolves to ")


async def test_repeated_compiles_are_reused_and_identical_with_their_own_ids(server) -> None:
    home = Path(server.home)
    write_home(home)
    server.ctx.compile_cache.settle_ns = 0  # the files were written just now
    request = full_profile_input()
    client = await server.client()
    responses = [
        await client.compile_prompt(input=request, thread_id=f"thr_{n}", turn_id=f"turn_{n}")
        for n in range(3)
    ]
    assert server.ctx.compile_cache.hits == 2
    for n, response in enumerate(responses):
        local = compile_prompt(request, [home], thread_id=f"thr_{n}", turn_id=f"turn_{n}")
        assert response.payload.SerializeToString(deterministic=True) == local.SerializeToString(
            deterministic=True
        )
    assert [r.manifest_event_id for r in responses] == sorted({r.manifest_event_id for r in responses})
    assert responses[0].manifest_event_id > 0
