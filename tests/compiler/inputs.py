"""Inputs shared by the compiler tests: a home with bootstrap files, and a full-profile input."""

from __future__ import annotations

from pathlib import Path

from pioneer_grpc.compiler import compile_prompt
from pioneer_grpc.v1 import common_pb2, prompt_pb2

SOUL_TEXT = "Voice: direct and concise."
IDENTITY_TEXT = "Name: Pioneer\nEmoji: compass"
USER_TEXT = "Name: Alex\nPrefers short answers."
AGENTS_TEXT = "Run `make test` before every commit."


def write_home(home: Path, *, user: bool = True, agents: bool = True) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    (home / "SOUL.md").write_text(SOUL_TEXT, encoding="utf-8")
    (home / "IDENTITY.md").write_text(IDENTITY_TEXT, encoding="utf-8")
    if user:
        (home / "USER.md").write_text(USER_TEXT, encoding="utf-8")
    if agents:
        folder = home / "projects" / "car" / "photos"
        folder.mkdir(parents=True, exist_ok=True)
        (home / "projects" / "car" / "AGENTS.md").write_text(AGENTS_TEXT, encoding="utf-8")
    return home


def car_photo() -> common_pb2.ArtifactRef:
    return common_pb2.ArtifactRef(
        artifact_id="art_1",
        version_id="ver_1",
        display_name='car "front".jpg',
        kind="image",
        mime_type="image/jpeg",
        size_bytes=862_208,
        role="user",
    )


def full_profile_input(profile: int = prompt_pb2.PROMPT_PROFILE_FULL) -> prompt_pb2.PromptCompileInput:
    """Every input set; pair it with `write_home` (AGENTS.md is resolved from projects/car/photos)."""
    return prompt_pb2.PromptCompileInput(
        profile=profile,
        skills_prompt="Skills are refreshed every turn.",
        retry_instruction="The last call failed: retry with corrected arguments.",
        include_tool_recovery_policy=True,
        include_task_orchestration_policy=True,
        continue_generation_hint=True,
        dynamic_context="Focus: the car photo question.",
        extra_system="Local time: 2026-01-05 09:30 CET. OS: Linux.",
        skills=prompt_pb2.SkillsInput(
            active_skills=[
                prompt_pb2.Skill(
                    slug="image-tools",
                    display_name="Image tools",
                    description="identifying objects in photos",
                    body="Open the image with artifact_read, then describe what you see.",
                    path_matched=True,
                ),
                prompt_pb2.Skill(slug="pdf", display_name="PDF", description="reading PDF files"),
            ],
            include_read_skill_hint=True,
        ),
        memory_recall=prompt_pb2.MemoryRecall(
            policy=prompt_pb2.MEMORY_POLICY_FULL,
            items=[
                prompt_pb2.MemoryItem(scope="user", category="preference", content="Prefers metric units."),
                prompt_pb2.MemoryItem(
                    scope="workspace", category="fact", content="The car is a 2019 hatchback."
                ),
            ],
            available_tools=["memory_search", "memory_write", "memory_forget"],
            thread_context="Earlier the user asked about tyre pressure.",
        ),
        agents_md=prompt_pb2.AgentsMdSource(thread_folder="projects/car/photos"),
        thread_context=[
            prompt_pb2.ThreadContextSnippet(
                snippet_id="thread:turn_7/item_2/chunk_0",
                text="what car is this?",
                provenance=prompt_pb2.SnippetProvenance(
                    workspace="home",
                    thread_id="thr_1",
                    turn_id="turn_7",
                    timestamp="2026-01-04T18:00:00Z",
                    source=prompt_pb2.THREAD_CONTEXT_SOURCE_CURRENT_THREAD,
                    score=0.875,
                    boundary="snippet",
                ),
                artifacts=[car_photo(), car_photo()],
            )
        ],
        hidden_tool_domains=[
            prompt_pb2.HiddenToolDomain(domain="artifact", tools=["artifact_read", "artifact_list"]),
            prompt_pb2.HiddenToolDomain(domain="memory", tools=["memory_search"]),
        ],
        permissions=prompt_pb2.PermissionProfile(
            mode=prompt_pb2.PERMISSION_MODE_ASK,
            rules=[
                prompt_pb2.PermissionRule(category="file_write", decision=prompt_pb2.PERMISSION_DECISION_ASK),
                prompt_pb2.PermissionRule(category="network", decision=prompt_pb2.PERMISSION_DECISION_DENY),
            ],
            denied_tools=["shell_exec"],
        ),
        dynamic_sections=[
            prompt_pb2.DynamicSection(
                id="weather.today",
                title="Weather",
                content="Sunny, 21 C.",
                hook_source=prompt_pb2.HookSource(
                    source=prompt_pb2.HookRef(
                        hook_id="weather",
                        subscription_id="sub_1",
                        phase=prompt_pb2.HOOK_PHASE_TURN_PRE_PROMPT_CONTEXT,
                    ),
                    contribution_kind=prompt_pb2.CONTRIBUTION_KIND_PROMPT_SECTION,
                    label="weather hook",
                ),
            )
        ],
        hook_sources=[
            prompt_pb2.HookSource(
                source=prompt_pb2.HookRef(hook_id="audit", subscription_id="sub_2"),
                contribution_kind=prompt_pb2.CONTRIBUTION_KIND_PROMPT_MANIFEST_DIAGNOSTIC,
                label="audit hook",
            )
        ],
    )


def compile_in(home: Path, request: prompt_pb2.PromptCompileInput | None = None, **fields: object):
    """Compile with `home` as the only runtime home; `fields` set PromptCompileInput fields."""
    if request is None:
        request = prompt_pb2.PromptCompileInput(**fields)  # type: ignore[arg-type]
    return compile_prompt(request, [home])


def section(payload: prompt_pb2.CompiledPromptPayload, section_id: str) -> prompt_pb2.PromptSection:
    matches = [s for s in payload.sections if s.id == section_id]
    assert len(matches) == 1, f"expected one section {section_id!r}, got {[s.id for s in payload.sections]}"
    return matches[0]


def codes(payload: prompt_pb2.CompiledPromptPayload) -> list[str]:
    return [d.code for d in payload.manifest.diagnostics]
