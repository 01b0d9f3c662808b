"""Character budgets: server defaults, fixed caps, and the effective limits of one compile.

An explicit limit in the request can only lower a default, never raise it;
negative values are rejected by validation before they get here.
"""

from __future__ import annotations

from dataclasses import dataclass

from pioneer_grpc.v1 import prompt_pb2

# Fixed caps (not settable per request).
HIDDEN_TOOL_DOMAINS_MAX_CHARS = 1_200
MEMORY_MAX_ITEMS = 5
MEMORY_ITEMS_MAX_CHARS = 1_500
MEMORY_ITEM_MAX_CHARS = 280
MEMORY_CONTEXT_BLOCK_MAX_CHARS = 1_500
THREAD_CONTEXT_SNIPPET_MAX_CHARS = 1_200
SKILL_BODIES_MAX_ACTIVE_SKILLS = 6


@dataclass(frozen=True)
class Limits:
    max_chars_per_file: int = 20_000
    max_chars_total: int = 150_000
    max_chars_per_dynamic_section: int = 8_000
    max_dynamic_chars_total: int = 16_000
    max_dynamic_sections: int = 16
    max_agents_md_chars: int = 20_000
    max_skills_chars: int = 24_000
    max_thread_context_chars: int = 2_400


DEFAULT_LIMITS = Limits()
LIMIT_FIELDS: tuple[str, ...] = tuple(Limits.__dataclass_fields__)


def resolve_limits(requested: prompt_pb2.PromptLimits) -> Limits:
    values = {}
    for name in LIMIT_FIELDS:
        default = getattr(DEFAULT_LIMITS, name)
        values[name] = min(default, getattr(requested, name)) if requested.HasField(name) else default
    return Limits(**values)
