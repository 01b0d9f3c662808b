"""Caller-defined dynamic sections (usually hook contributions), in request order.

Each section is cut to the smallest of the per-section limit, its own
max_chars and what is left of the total budget; at most max_dynamic_sections
are kept. Every cut and every omission becomes a diagnostic with the
original's wording, and each section's hook source is recorded with who
truncated it.
"""

from __future__ import annotations

from pioneer_grpc.compiler import diagnostics as codes
from pioneer_grpc.compiler import sections as ids
from pioneer_grpc.compiler.diagnostics import CompileLog
from pioneer_grpc.compiler.limits import Limits
from pioneer_grpc.compiler.text import one_line, sanitize
from pioneer_grpc.v1 import prompt_pb2

_HOOK_TRUNCATIONS = (prompt_pb2.TRUNCATION_HOOK, prompt_pb2.TRUNCATION_HOOK_AND_PROMPT)


def hook_label(section: prompt_pb2.DynamicSection) -> str | None:
    if not section.HasField("hook_source"):
        return None
    hook = section.hook_source
    return one_line(hook.label) or one_line(hook.source.hook_id) or None


def _truncation(by_hook: bool, by_prompt: bool) -> prompt_pb2.Truncation:
    if by_hook and by_prompt:
        return prompt_pb2.TRUNCATION_HOOK_AND_PROMPT
    if by_hook:
        return prompt_pb2.TRUNCATION_HOOK
    if by_prompt:
        return prompt_pb2.TRUNCATION_PROMPT
    return prompt_pb2.TRUNCATION_NONE


def render_caller_sections(
    requested: list[prompt_pb2.DynamicSection], limits: Limits, log: CompileLog
) -> list[prompt_pb2.PromptSection]:
    built: list[prompt_pb2.PromptSection] = []
    remaining = limits.max_dynamic_chars_total
    for item in requested:
        label = hook_label(item)
        if len(built) >= limits.max_dynamic_sections:
            log.dynamic_section_omitted(item.id, codes.OMITTED_COUNT, label)
            continue
        content = sanitize(item.content)
        if not content:
            log.dynamic_section_omitted(item.id, codes.OMITTED_EMPTY, label)
            continue
        if remaining == 0:
            log.dynamic_section_omitted(item.id, codes.OMITTED_BUDGET, label)
            continue
        limit = min(limits.max_chars_per_dynamic_section, remaining)
        if item.HasField("max_chars"):
            limit = min(limit, item.max_chars)
        if limit == 0:
            log.dynamic_section_omitted(item.id, codes.OMITTED_ZERO_LIMIT, label)
            continue
        cut_here = len(content) > limit
        kept = content[:limit].rstrip() if cut_here else content
        if item.truncated or cut_here:
            log.dynamic_section_truncated(item.id, len(content), len(kept), label)
        section = ids.make_section(
            item.id,
            ids.DYNAMIC,
            ids.caller_section_title(item.id, one_line(item.title)),
            kept,
            [label] if label else [],
        )
        if section is None:
            continue
        remaining -= len(section.content)
        built.append(section)
        if item.HasField("hook_source"):
            hook = prompt_pb2.HookSource()
            hook.CopyFrom(item.hook_source)
            by_hook = item.truncated or hook.truncation in _HOOK_TRUNCATIONS
            hook.section_id = item.id
            hook.truncation = _truncation(by_hook, cut_here)
            log.hook_sources.append(hook)
    return built
