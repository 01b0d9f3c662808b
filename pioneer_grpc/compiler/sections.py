"""Section ids, titles, order and profile membership, and how a section renders.

The order is the seed's section table. Two kinds of dynamic section have no row
there and sit at a fixed place (see the package docstring): `thread_context`
right after `memory_recall`, and caller-defined dynamic sections, in request
order, right after `agents_md`.
"""

from __future__ import annotations

import hashlib

from pioneer_grpc.v1 import prompt_pb2

STABLE = prompt_pb2.SECTION_STABILITY_STABLE
DYNAMIC = prompt_pb2.SECTION_STABILITY_DYNAMIC

FULL = prompt_pb2.PROMPT_PROFILE_FULL
MINIMAL = prompt_pb2.PROMPT_PROFILE_MINIMAL
NONE = prompt_pb2.PROMPT_PROFILE_NONE

# Placeholder in SECTION_ORDER where caller-defined dynamic sections go.
CALLER_DYNAMIC_SLOT = "<caller dynamic sections>"

IDENTITY_BASE = "identity_base"
ASSISTANT_SAFETY = "assistant_safety"
SOUL_CORE = "soul_core"
IDENTITY_CORE = "identity_core"
USER_PERSONA = "user_persona"
TOOL_RECOVERY_POLICY = "tool_recovery_policy"
CURRENT_PERMISSIONS = "current_permissions"
TASK_ORCHESTRATION_POLICY = "task_orchestration_policy"
MEMORY_RECALL = "memory_recall"
THREAD_CONTEXT = "thread_context"
ARTIFACT_REFERENCES = "artifact_references"
HIDDEN_TOOL_DOMAINS = "request_tools.hidden_domains"
AGENTS_MD = "agents_md"
RECOVERY_CONTINUATION = "recovery_continuation"
SKILLS_RUNTIME = "skills_runtime_prompt"
RETRY_INSTRUCTION = "retry_runtime_instruction"
DYNAMIC_CONTEXT = "dynamic_context"
EXTRA_SYSTEM = "extra_system"

TITLES: dict[str, str] = {
    IDENTITY_BASE: "Identity",
    ASSISTANT_SAFETY: "Safety",
    SOUL_CORE: "Soul Core",
    IDENTITY_CORE: "Identity Core",
    USER_PERSONA: "User Persona",
    TOOL_RECOVERY_POLICY: "Tool Recovery Policy",
    CURRENT_PERMISSIONS: "Current Permissions",
    TASK_ORCHESTRATION_POLICY: "Task Orchestration",
    MEMORY_RECALL: "Memory Recall",
    THREAD_CONTEXT: "Thread Context",
    ARTIFACT_REFERENCES: "Artifact References",
    HIDDEN_TOOL_DOMAINS: "Hidden Tool Domains",
    AGENTS_MD: "AGENTS.md",
    RECOVERY_CONTINUATION: "Recovery Continuation",
    SKILLS_RUNTIME: "Skills Runtime",
    RETRY_INSTRUCTION: "Retry Instruction",
    DYNAMIC_CONTEXT: "Dynamic Context",
    EXTRA_SYSTEM: "Extra System",
}

STABLE_ORDER: tuple[str, ...] = (
    IDENTITY_BASE,
    ASSISTANT_SAFETY,
    SOUL_CORE,
    IDENTITY_CORE,
    USER_PERSONA,
    TOOL_RECOVERY_POLICY,
)

DYNAMIC_ORDER: tuple[str, ...] = (
    CURRENT_PERMISSIONS,
    TASK_ORCHESTRATION_POLICY,
    MEMORY_RECALL,
    THREAD_CONTEXT,
    ARTIFACT_REFERENCES,
    HIDDEN_TOOL_DOMAINS,
    AGENTS_MD,
    CALLER_DYNAMIC_SLOT,
    RECOVERY_CONTINUATION,
    SKILLS_RUNTIME,
    RETRY_INSTRUCTION,
    DYNAMIC_CONTEXT,
    EXTRA_SYSTEM,
)

SECTION_ORDER: tuple[str, ...] = STABLE_ORDER + DYNAMIC_ORDER

BUILTIN_SECTION_IDS: frozenset[str] = frozenset(TITLES)

BOOTSTRAP_SECTION_IDS: frozenset[str] = frozenset({SOUL_CORE, IDENTITY_CORE, USER_PERSONA})

# Which built-in sections each profile renders; caller dynamic sections follow FULL.
PROFILE_SECTIONS: dict[int, frozenset[str]] = {
    FULL: BUILTIN_SECTION_IDS | {CALLER_DYNAMIC_SLOT},
    MINIMAL: frozenset({IDENTITY_BASE, ASSISTANT_SAFETY}) | BOOTSTRAP_SECTION_IDS,
    NONE: frozenset({IDENTITY_BASE}),
}


def effective_profile(profile: prompt_pb2.PromptProfile) -> prompt_pb2.PromptProfile:
    """UNSPECIFIED means FULL; callers validate out-of-range values first."""
    return FULL if profile == prompt_pb2.PROMPT_PROFILE_UNSPECIFIED else profile


def profile_includes(profile: int, section_id: str) -> bool:
    return section_id in PROFILE_SECTIONS[profile]


def caller_section_title(section_id: str, title: str | None) -> str:
    if title is not None and title.strip():
        return title.strip()
    return f"Dynamic: {section_id}"


def render_section(section: prompt_pb2.PromptSection) -> str:
    return f"## {section.title}\n{section.content}"


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_section(
    section_id: str,
    stability: prompt_pb2.SectionStability,
    title: str,
    content: str,
    sources: list[str] | None = None,
) -> prompt_pb2.PromptSection | None:
    """A section with its fingerprint, or None when there is nothing to say."""
    content = content.strip()
    if not content:
        return None
    section = prompt_pb2.PromptSection(
        id=section_id,
        stability=stability,
        title=title.strip(),
        content=content,
        sources=sources or [],
    )
    section.fingerprint = fingerprint(render_section(section))
    return section


def render_half(sections: list[prompt_pb2.PromptSection]) -> str:
    return "\n\n".join(render_section(s) for s in sections)
