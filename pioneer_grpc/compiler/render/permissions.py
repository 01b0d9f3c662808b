"""The current permissions section: guidance on what may need approval this turn.

Absent for full access (or an unspecified mode) when nothing is narrowed. This
is guidance only; enforcement happens outside the model.
"""

from __future__ import annotations

from pioneer_grpc.compiler.text import one_line
from pioneer_grpc.v1 import prompt_pb2

APPROVAL_LINE = (
    "Actions in the categories below may need the user's approval before they run; "
    "a denied category is not available at all."
)
MODE_ONLY_LINE = "Some actions may need the user's approval before they run."
CLOSING_LINE = (
    "These rules are enforced outside of you. If an action is blocked or the user declines it, "
    "continue with an allowed alternative instead of trying the same action again."
)
_MODE_NAMES = {
    prompt_pb2.PERMISSION_MODE_UNSPECIFIED: "full_access",
    prompt_pb2.PERMISSION_MODE_ASK: "ask",
    prompt_pb2.PERMISSION_MODE_AUTO: "auto",
    prompt_pb2.PERMISSION_MODE_FULL_ACCESS: "full_access",
}
# An unspecified decision is read the cautious way.
_DECISION_NAMES = {
    prompt_pb2.PERMISSION_DECISION_UNSPECIFIED: "ask",
    prompt_pb2.PERMISSION_DECISION_ASK: "ask",
    prompt_pb2.PERMISSION_DECISION_ALLOW: "allow",
    prompt_pb2.PERMISSION_DECISION_DENY: "deny",
}


def _rules(profile: prompt_pb2.PermissionProfile) -> list[tuple[str, str]]:
    return [
        (one_line(rule.category), _DECISION_NAMES[rule.decision])
        for rule in profile.rules
        if rule.category.strip()
    ]


def _listed(values: list[str]) -> list[str]:
    return [one_line(v) for v in values if v.strip()]


def is_narrowed(profile: prompt_pb2.PermissionProfile) -> bool:
    return bool(
        any(decision != "allow" for _, decision in _rules(profile))
        or _listed(list(profile.allowed_tools))
        or _listed(list(profile.denied_tools))
        or _listed(list(profile.allowed_paths))
    )


def render_permissions(profile: prompt_pb2.PermissionProfile) -> str:
    mode = _MODE_NAMES[profile.mode]
    if mode == "full_access" and not is_narrowed(profile):
        return ""
    rules = _rules(profile)
    lines = [f"- mode: {mode}", APPROVAL_LINE if rules else MODE_ONLY_LINE]
    lines += [f"- {category}: {decision}" for category, decision in rules]
    for label, values in (
        ("Allowed tools", _listed(list(profile.allowed_tools))),
        ("Denied tools", _listed(list(profile.denied_tools))),
        ("Allowed paths", _listed(list(profile.allowed_paths))),
    ):
        if values:
            lines.append(f"{label}: {', '.join(values)}")
    lines.append(CLOSING_LINE)
    return "\n".join(lines)
