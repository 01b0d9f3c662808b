"""compile_prompt: one PromptCompileInput in, one CompiledPromptPayload out.

Order of work: validate every field (InvalidArgument), confine every path
(PermissionDenied), then render. Rendering never raises: missing, unreadable,
oversized or refused files and over-budget inputs become diagnostics. The
function reads files and is synchronous; the server runs it in a worker thread,
through cache.CompileCache. Every lookup and read goes through one FsView, which
keeps the answers so a cache can tell later whether they still hold. What the
server configures for every compile (persona, home labels) comes in as
CompileSettings; the defaults are the seed's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pioneer_grpc.compiler import sections as ids
from pioneer_grpc.compiler.bootstrap import filter_bootstrap_files, load_bootstrap_sections
from pioneer_grpc.compiler.diagnostics import CompileLog
from pioneer_grpc.compiler.fsview import FsView
from pioneer_grpc.compiler.limits import Limits, resolve_limits
from pioneer_grpc.compiler.manifest import build_payload
from pioneer_grpc.compiler.paths import Homes, resolve_homes, resolve_inside, resolve_workspace_root
from pioneer_grpc.compiler.profile_inputs import log_dropped_inputs
from pioneer_grpc.compiler.render import policies
from pioneer_grpc.compiler.render.agents_md import (
    AgentsDoc,
    caller_agents_md,
    find_agents_md,
    render_agents_md,
)
from pioneer_grpc.compiler.render.dynamic_sections import render_caller_sections
from pioneer_grpc.compiler.render.hidden_tools import render_hidden_tool_domains
from pioneer_grpc.compiler.render.memory import render_memory_recall
from pioneer_grpc.compiler.render.permissions import render_permissions
from pioneer_grpc.compiler.render.skills import render_skills
from pioneer_grpc.compiler.render.thread_context import render_thread_context
from pioneer_grpc.compiler.settings import DEFAULT_SETTINGS, CompileSettings
from pioneer_grpc.compiler.text import sanitize
from pioneer_grpc.compiler.validate import validate_input
from pioneer_grpc.v1 import prompt_pb2

THREAD_FOLDER_FIELD = "input.agents_md.thread_folder"
# The Identity section's source when a request set its persona.
PERSONA_SOURCE = "input.persona"
# An artifact line as rendered by pioneer_grpc.artifacts, wherever it appears.
ARTIFACT_LINE = re.compile(r"^- artifactId=", re.MULTILINE)


def compile_prompt(
    request: prompt_pb2.PromptCompileInput,
    allowed_roots: Sequence[Path],
    *,
    settings: CompileSettings = DEFAULT_SETTINGS,
    thread_id: str = "",
    turn_id: str = "",
) -> prompt_pb2.CompiledPromptPayload:
    return compile_seen(
        request, allowed_roots, FsView(), settings=settings, thread_id=thread_id, turn_id=turn_id
    )


def compile_seen(
    request: prompt_pb2.PromptCompileInput,
    allowed_roots: Sequence[Path],
    view: FsView,
    *,
    settings: CompileSettings = DEFAULT_SETTINGS,
    thread_id: str = "",
    turn_id: str = "",
) -> prompt_pb2.CompiledPromptPayload:
    """compile_prompt, asking the filesystem only through `view` (which keeps the answers)."""
    validate_input(request)
    homes = resolve_homes(allowed_roots, view)
    workspace = resolve_workspace_root(request.workspace_root, homes)
    agents_folder: Path | None = None
    if request.HasField("agents_md") and request.agents_md.WhichOneof("source") == "thread_folder":
        agents_folder = resolve_inside(request.agents_md.thread_folder, workspace, THREAD_FOLDER_FIELD, view)
    profile = ids.effective_profile(request.profile)
    limits = resolve_limits(request.limits)
    log = CompileLog()
    stable = _stable_sections(request, settings, profile, workspace, homes, limits, log)
    dynamic: list[prompt_pb2.PromptSection] = []
    if profile == ids.FULL:  # minimal and none have no dynamic half
        dynamic = _dynamic_sections(request, workspace, homes, agents_folder, limits, log)
        if any(ARTIFACT_LINE.search(s.content) for s in [*stable, *dynamic]):
            dynamic = _in_order([*dynamic, _builtin(ids.ARTIFACT_REFERENCES, policies.ARTIFACT_REFERENCES)])
    else:
        log_dropped_inputs(request, profile, log)
    return build_payload(
        stable, dynamic, profile, log, list(request.hook_sources), thread_id=thread_id, turn_id=turn_id
    )


def _builtin(
    section_id: str, content: str, sources: list[str] | None = None
) -> prompt_pb2.PromptSection | None:
    stability = ids.STABLE if section_id in ids.STABLE_ORDER else ids.DYNAMIC
    return ids.make_section(section_id, stability, ids.TITLES[section_id], content, sources)


def _in_order(sections: list[prompt_pb2.PromptSection | None]) -> list[prompt_pb2.PromptSection]:
    """Drop empty sections and sort by SECTION_ORDER; caller sections keep request order in their slot."""
    slot = {section_id: index for index, section_id in enumerate(ids.SECTION_ORDER)}
    caller_slot = slot[ids.CALLER_DYNAMIC_SLOT]
    present = [s for s in sections if s is not None]
    return sorted(present, key=lambda s: slot.get(s.id, caller_slot))


def _identity(
    request: prompt_pb2.PromptCompileInput, settings: CompileSettings
) -> prompt_pb2.PromptSection | None:
    """The request's persona, else the server's; none when the request omits it."""
    if request.omit_persona:
        return None
    if request.HasField("persona"):
        return _builtin(ids.IDENTITY_BASE, sanitize(request.persona), [PERSONA_SOURCE])
    source = [settings.persona_source] if settings.persona_source else None
    return _builtin(ids.IDENTITY_BASE, settings.persona, source)


def reads_identity_files(request: prompt_pb2.PromptCompileInput, settings: CompileSettings) -> bool:
    """Whether SOUL.md and IDENTITY.md are read: as the request says, else as the server says, else
    only while the built-in persona is in effect (any other persona, or none, is the team's own)."""
    if request.HasField("identity_files"):
        return request.identity_files
    if settings.identity_files is not None:
        return settings.identity_files
    own = request.HasField("persona") or request.omit_persona or settings.persona != DEFAULT_SETTINGS.persona
    return not own


def _stable_sections(
    request: prompt_pb2.PromptCompileInput,
    settings: CompileSettings,
    profile: prompt_pb2.PromptProfile,
    workspace: Path,
    homes: Homes,
    limits: Limits,
    log: CompileLog,
) -> list[prompt_pb2.PromptSection]:
    found: list[prompt_pb2.PromptSection | None] = [
        _identity(request, settings),
        _builtin(ids.ASSISTANT_SAFETY, policies.SAFETY),
    ]
    if ids.profile_includes(profile, ids.SOUL_CORE):
        found += load_bootstrap_sections(
            workspace, homes, limits, log, settings.home_labels(), reads_identity_files(request, settings)
        )
    else:
        filter_bootstrap_files(workspace, log)
    if request.include_tool_recovery_policy:
        found.append(_builtin(ids.TOOL_RECOVERY_POLICY, policies.TOOL_RECOVERY))
    return [s for s in _in_order(found) if ids.profile_includes(profile, s.id)]


def _agents_doc(
    request: prompt_pb2.PromptCompileInput,
    workspace: Path,
    homes: Homes,
    folder: Path | None,
    limits: Limits,
    log: CompileLog,
) -> AgentsDoc | None:
    if not request.HasField("agents_md"):
        return None
    if request.agents_md.WhichOneof("source") == "content":
        return caller_agents_md(request.agents_md.content, limits.max_agents_md_chars, log)
    if folder is not None:
        return find_agents_md(folder, workspace, homes, limits.max_agents_md_chars, log)
    return None


def _dynamic_sections(
    request: prompt_pb2.PromptCompileInput,
    workspace: Path,
    homes: Homes,
    agents_folder: Path | None,
    limits: Limits,
    log: CompileLog,
) -> list[prompt_pb2.PromptSection]:
    # Rendered in section order, so diagnostics and hook sources come out in that order too.
    found: list[prompt_pb2.PromptSection | None] = [
        _builtin(ids.CURRENT_PERMISSIONS, render_permissions(request.permissions)),
    ]
    if request.include_task_orchestration_policy:
        found.append(_builtin(ids.TASK_ORCHESTRATION_POLICY, policies.TASK_ORCHESTRATION))
    found.append(_builtin(ids.MEMORY_RECALL, render_memory_recall(request.memory_recall, log)))
    found.append(
        _builtin(
            ids.THREAD_CONTEXT,
            render_thread_context(list(request.thread_context), limits.max_thread_context_chars, log),
        )
    )
    found.append(
        _builtin(ids.HIDDEN_TOOL_DOMAINS, render_hidden_tool_domains(list(request.hidden_tool_domains), log))
    )
    doc = _agents_doc(request, workspace, homes, agents_folder, limits, log)
    if doc is not None:
        found.append(
            _builtin(
                ids.AGENTS_MD,
                render_agents_md(doc, limits.max_agents_md_chars, log),
                [doc.path] if doc.path else [doc.label],
            )
        )
    found += render_caller_sections(list(request.dynamic_sections), limits, log)
    if request.continue_generation_hint:
        found.append(_builtin(ids.RECOVERY_CONTINUATION, policies.RECOVERY_CONTINUATION))
    found.append(
        _builtin(
            ids.SKILLS_RUNTIME,
            render_skills(request.skills, request.skills_prompt, limits.max_skills_chars, log),
        )
    )
    found.append(_builtin(ids.RETRY_INSTRUCTION, sanitize(request.retry_instruction)))
    found.append(_builtin(ids.DYNAMIC_CONTEXT, sanitize(request.dynamic_context)))
    found.append(_builtin(ids.EXTRA_SYSTEM, sanitize(request.extra_system)))
    return _in_order(found)
