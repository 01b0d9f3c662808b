"""Input validation: every bad field of a PromptCompileInput, reported at once.

Field paths are relative to the request (`input.dynamic_sections[2].id`).

An agent loop sends the same compile input every round, and walking it against
its caps costs about as much as the rest of a round's Python; so the inputs
found valid are remembered by their bytes (a few, bounded in bytes), and the
same bytes are valid again without a walk.
"""

from __future__ import annotations

from pioneer_grpc.caps import violations_of
from pioneer_grpc.compiler.limits import LIMIT_FIELDS
from pioneer_grpc.compiler.sections import BUILTIN_SECTION_IDS
from pioneer_grpc.compiler.text import sanitize
from pioneer_grpc.errors import FieldViolation, InvalidArgument
from pioneer_grpc.remembered import Remembered
from pioneer_grpc.v1 import prompt_pb2

PREFIX = "input"


def _enum(violations: list[FieldViolation], field: str, enum_name: str, value: int) -> None:
    enum = prompt_pb2.DESCRIPTOR.enum_types_by_name[enum_name]
    if value not in enum.values_by_number:
        known = ", ".join(v.name for v in enum.values)
        violations.append(FieldViolation(field, f"unknown value {value}; expected one of {known}"))


def _dynamic_id_problem(section_id: str, first_seen: dict[str, int]) -> str | None:
    if not section_id:
        return "must not be empty"
    if any(ch.isspace() for ch in section_id):
        return "must not contain whitespace"
    if section_id in BUILTIN_SECTION_IDS:
        return f"collides with the built-in section id {section_id!r}"
    if section_id in first_seen:
        return f"duplicates {PREFIX}.dynamic_sections[{first_seen[section_id]}].id"
    return None


def _persona_violations(request: prompt_pb2.PromptCompileInput) -> list[FieldViolation]:
    if not request.HasField("persona"):
        return []
    if request.omit_persona:
        return [FieldViolation(f"{PREFIX}.omit_persona", "cannot be set together with persona")]
    if not sanitize(request.persona):
        return [
            FieldViolation(
                f"{PREFIX}.persona",
                "must not be blank; set omit_persona to leave the Identity section out",
            )
        ]
    return []


def validate_input(request: prompt_pb2.PromptCompileInput) -> None:
    InvalidArgument.raise_if(input_violations(request), "invalid prompt compile input")


# Bytes of serialized inputs remembered as valid.
_KNOWN_VALID_BYTES = 2 * 1024 * 1024


_known_valid: Remembered[bool] = Remembered(_KNOWN_VALID_BYTES)


def known_valid(request: prompt_pb2.PromptCompileInput) -> bool:
    """True when these very bytes were found valid before: `input_violations` would be empty."""
    return _known_valid.get(request.SerializeToString(deterministic=True)) is not None


def input_violations(request: prompt_pb2.PromptCompileInput) -> list[FieldViolation]:
    """Every bad field, named `input.…`; a request over its caps is not looked at further."""
    encoded = request.SerializeToString(deterministic=True)
    if _known_valid.get(encoded) is not None:
        return []
    violations = _violations(request)
    if not violations:
        _known_valid.put(encoded, True)
    return violations


def _violations(request: prompt_pb2.PromptCompileInput) -> list[FieldViolation]:
    over_caps = violations_of(request, PREFIX)
    if over_caps:
        return over_caps
    violations: list[FieldViolation] = []
    _enum(violations, f"{PREFIX}.profile", "PromptProfile", request.profile)
    violations += _persona_violations(request)
    for name in LIMIT_FIELDS:
        if request.limits.HasField(name) and getattr(request.limits, name) < 0:
            violations.append(FieldViolation(f"{PREFIX}.limits.{name}", "must not be negative"))
    first_seen: dict[str, int] = {}
    for index, section in enumerate(request.dynamic_sections):
        field = f"{PREFIX}.dynamic_sections[{index}]"
        problem = _dynamic_id_problem(section.id, first_seen)
        if problem:
            violations.append(FieldViolation(f"{field}.id", problem))
        first_seen.setdefault(section.id, index)
        if section.HasField("max_chars") and section.max_chars < 0:
            violations.append(FieldViolation(f"{field}.max_chars", "must not be negative"))
    for index, skill in enumerate(request.skills.active_skills):
        if not skill.slug.strip():
            violations.append(
                FieldViolation(f"{PREFIX}.skills.active_skills[{index}].slug", "must not be empty")
            )
    _enum(violations, f"{PREFIX}.memory_recall.policy", "MemoryPolicy", request.memory_recall.policy)
    _enum(violations, f"{PREFIX}.permissions.mode", "PermissionMode", request.permissions.mode)
    for index, rule in enumerate(request.permissions.rules):
        _enum(
            violations,
            f"{PREFIX}.permissions.rules[{index}].decision",
            "PermissionDecision",
            rule.decision,
        )
    return violations
