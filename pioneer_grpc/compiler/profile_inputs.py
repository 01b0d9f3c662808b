"""Inputs a request set that its profile does not render: each one becomes a diagnostic.

The minimal and none profiles have no dynamic half, and only the full profile
has the tool recovery policy; a caller who sets those inputs with such a profile
would otherwise never learn that the model did not see them.
"""

from __future__ import annotations

from pioneer_grpc.compiler import diagnostics as codes
from pioneer_grpc.compiler import sections as ids
from pioneer_grpc.compiler.diagnostics import CompileLog
from pioneer_grpc.compiler.render.memory import GUIDANCE
from pioneer_grpc.compiler.render.permissions import render_permissions
from pioneer_grpc.v1 import prompt_pb2

PROFILE_NAMES: dict[int, str] = {ids.FULL: "full", ids.MINIMAL: "minimal", ids.NONE: "none"}


def _set_inputs(request: prompt_pb2.PromptCompileInput) -> list[tuple[str, str]]:
    """(input field, the section it would render) for every input the request set, in field order."""
    optional_text = [
        (name, section)
        for name, section in (
            ("skills_prompt", ids.SKILLS_RUNTIME),
            ("retry_instruction", ids.RETRY_INSTRUCTION),
            ("dynamic_context", ids.DYNAMIC_CONTEXT),
            ("extra_system", ids.EXTRA_SYSTEM),
        )
        if request.HasField(name) and getattr(request, name).strip()
    ]
    flags = [
        ("include_tool_recovery_policy", ids.TOOL_RECOVERY_POLICY, request.include_tool_recovery_policy),
        (
            "include_task_orchestration_policy",
            ids.TASK_ORCHESTRATION_POLICY,
            request.include_task_orchestration_policy,
        ),
        ("continue_generation_hint", ids.RECOVERY_CONTINUATION, request.continue_generation_hint),
        ("skills", ids.SKILLS_RUNTIME, bool(request.skills.active_skills)),
        ("memory_recall", ids.MEMORY_RECALL, request.memory_recall.policy in GUIDANCE),
        ("agents_md", ids.AGENTS_MD, request.HasField("agents_md")),
        ("thread_context", ids.THREAD_CONTEXT, bool(request.thread_context)),
        ("hidden_tool_domains", ids.HIDDEN_TOOL_DOMAINS, bool(request.hidden_tool_domains)),
        ("permissions", ids.CURRENT_PERMISSIONS, bool(render_permissions(request.permissions).strip())),
        ("dynamic_sections", ids.CALLER_DYNAMIC_SLOT, bool(request.dynamic_sections)),
    ]
    found = optional_text + [(name, section) for name, section, present in flags if present]
    order = [f.name for f in prompt_pb2.PromptCompileInput.DESCRIPTOR.fields]
    return sorted(found, key=lambda pair: order.index(pair[0]))


def log_dropped_inputs(request: prompt_pb2.PromptCompileInput, profile: int, log: CompileLog) -> None:
    name = PROFILE_NAMES[profile]
    for field, section in _set_inputs(request):
        if ids.profile_includes(profile, section):
            continue
        log.add(
            codes.INPUT_DROPPED_BY_PROFILE,
            f"input `{field}` was set but the {name} profile does not render it",
            section_id=None if section == ids.CALLER_DYNAMIC_SLOT else section,
        )
