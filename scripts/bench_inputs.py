"""Inputs for benchmarking CompilePrompt: one realistic request with every section set.

`full_compile_request(home)` writes what the request reads into `home` (the
seeded SOUL.md and IDENTITY.md, a USER.md, and an AGENTS.md two folders above
the thread folder), then returns a CompilePromptRequest whose workspace_root is
`home`. Run the server with `home` as its runtime home.
"""

from __future__ import annotations

import time
from pathlib import Path

from google.protobuf import json_format

from pioneer_grpc.compiler.cache import SETTLE_NS
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.v1 import common_pb2, prompt_pb2
from pioneer_grpc.v1 import prompt_compiler_service_pb2 as pb

THREAD_FOLDER = "projects/garage/photos"


def prepare_home(home: Path) -> None:
    ensure_bootstrap_files(home)
    (home / "USER.md").write_text(
        "Name: Alex\nTimezone: Europe/Paris\nPrefers short answers with one example.\n", encoding="utf-8"
    )
    folder = home / THREAD_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    rules = "\n".join(
        f"- Rule {n}: keep photo notes in notes/{n:02d}.md and cite the file." for n in range(40)
    )
    (home / "projects" / "AGENTS.md").write_text(rules, encoding="utf-8")
    _settled(home)


def _settled(home: Path) -> None:
    """Returns once every file under `home` last changed more than SETTLE_NS ago.

    The compile cache keeps no compile that read a file changed less than SETTLE_NS before it
    began (compiler/cache.py), so a loop measured right after these files were written compiles
    afresh every round until they settle: about 1 ms more a PrepareTurn, a shape no one runs,
    whose SOUL.md and AGENTS.md were written long before their agent's turns.
    """
    newest = max(
        max(info.st_mtime_ns, info.st_ctime_ns)
        for info in (path.stat() for path in home.rglob("*") if path.is_file())
    )
    # File times come from the kernel's coarse clock, which lags time_ns() by at most a tick.
    wait_ns = newest + SETTLE_NS - time.time_ns()
    if wait_ns > 0:
        time.sleep(wait_ns / 1e9 + 0.05)


def _artifact(n: int) -> common_pb2.ArtifactRef:
    return common_pb2.ArtifactRef(
        artifact_id=f"art_{n}",
        version_id=f"ver_{n}",
        display_name=f"photo_{n}.jpg",
        kind="image",
        mime_type="image/jpeg",
        size_bytes=850_000 + n * 1_000,
        role="user",
    )


def full_compile_input() -> prompt_pb2.PromptCompileInput:
    return prompt_pb2.PromptCompileInput(
        profile=prompt_pb2.PROMPT_PROFILE_FULL,
        skills_prompt="Skill list refreshed at the start of the turn.",
        retry_instruction="The last tool call failed with a missing argument; retry with a corrected call.",
        include_tool_recovery_policy=True,
        include_task_orchestration_policy=True,
        continue_generation_hint=True,
        dynamic_context="The user is sorting car photos into folders by model year.",
        extra_system="Local time: 2026-01-05 09:30 CET. OS: Linux 6.8.",
        skills=prompt_pb2.SkillsInput(
            active_skills=[
                prompt_pb2.Skill(
                    slug=f"skill-{n}",
                    display_name=f"Skill {n}",
                    description=f"tasks of kind {n}",
                    body="Step one. Step two. Step three.\n" * 40,
                    path_matched=n % 2 == 0,
                )
                for n in range(6)
            ],
            include_read_skill_hint=True,
        ),
        memory_recall=prompt_pb2.MemoryRecall(
            policy=prompt_pb2.MEMORY_POLICY_FULL,
            items=[
                prompt_pb2.MemoryItem(
                    scope="user", category="preference", content=f"Preference number {n}. " * 8
                )
                for n in range(7)
            ],
            available_tools=["memory_search", "memory_write", "memory_forget"],
            thread_context="Earlier in this thread the user renamed the folders.",
            task_context="A background task is indexing the photos.",
        ),
        agents_md=prompt_pb2.AgentsMdSource(thread_folder=THREAD_FOLDER),
        thread_context=[
            prompt_pb2.ThreadContextSnippet(
                snippet_id=f"thread:turn_{n}/item_1/chunk_0",
                text=f"Which car is in photo {n}? " * 6,
                provenance=prompt_pb2.SnippetProvenance(
                    thread_id="thr_bench",
                    turn_id=f"turn_{n}",
                    timestamp="2026-01-04T18:00:00Z",
                    source=prompt_pb2.THREAD_CONTEXT_SOURCE_CURRENT_THREAD,
                    score=0.9 - n / 10,
                    boundary="snippet",
                ),
                artifacts=[_artifact(n), _artifact(n + 10)],
            )
            for n in range(3)
        ],
        hidden_tool_domains=[
            prompt_pb2.HiddenToolDomain(
                domain=name, tools=[f"{name}_{verb}" for verb in ("read", "list", "write")]
            )
            for name in ("artifact", "memory", "task", "computer_use")
        ],
        permissions=prompt_pb2.PermissionProfile(
            mode=prompt_pb2.PERMISSION_MODE_ASK,
            rules=[
                prompt_pb2.PermissionRule(category="file_write", decision=prompt_pb2.PERMISSION_DECISION_ASK),
                prompt_pb2.PermissionRule(category="shell", decision=prompt_pb2.PERMISSION_DECISION_DENY),
                prompt_pb2.PermissionRule(category="network", decision=prompt_pb2.PERMISSION_DECISION_ALLOW),
            ],
            denied_tools=["shell_exec"],
            allowed_paths=["~/Pictures"],
        ),
        dynamic_sections=[
            prompt_pb2.DynamicSection(
                id=f"hook.section_{n}",
                title=f"Hook section {n}",
                content=f"Contribution {n}. " * 50,
                hook_source=prompt_pb2.HookSource(
                    source=prompt_pb2.HookRef(
                        hook_id=f"hook_{n}",
                        subscription_id=f"sub_{n}",
                        phase=prompt_pb2.HOOK_PHASE_TURN_PRE_PROMPT_CONTEXT,
                    ),
                    contribution_kind=prompt_pb2.CONTRIBUTION_KIND_PROMPT_SECTION,
                    label=f"hook {n}",
                ),
            )
            for n in range(8)
        ],
    )


def full_compile_request(home: Path) -> pb.CompilePromptRequest:
    prepare_home(home)
    request = full_compile_input()
    request.workspace_root = str(home)
    return pb.CompilePromptRequest(input=request)


def loop_inputs(folder: Path) -> tuple[Path, Path]:
    """Under `folder`: the server's home, prepared, and the request file the Go loop sends
    (`pioneer-load -input`, the request as JSON)."""
    home = folder / "home"
    home.mkdir()
    request_file = folder / "compile.json"
    request_file.write_text(json_format.MessageToJson(full_compile_request(home)))
    return home, request_file


if __name__ == "__main__":
    import sys
    import tempfile

    from pioneer_grpc.compiler import compile_prompt

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp).resolve()
        payload = compile_prompt(full_compile_request(home).input, [home])
        print(f"{len(payload.sections)} sections, {len(payload.full_system_text)} chars", file=sys.stderr)
