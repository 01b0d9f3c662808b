"""What every provider's strict checker shares (each provider's own, with its rules, is in its
tests folder: tests/providers/<provider>/rules.py).

A strict checker holds a provider's documented conversation rules in their strictest reading,
written from the provider's API reference and error messages, not from the server's code. A body
that breaks one raises StrictViolation listing every rule broken, as `rule-id: where: what`.
"""

from __future__ import annotations

import json
import re
from typing import Any

# The name pattern both OpenAI APIs take for functions and participants.
OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


class StrictViolation(AssertionError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems

    @property
    def rules(self) -> set[str]:
        return {p.split(":", 1)[0] for p in self.problems}


class Check:
    """Collects the rules a body breaks; `done` raises them all at once."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def __call__(self, ok: object, rule: str, where: str, what: str) -> bool:
        if not ok:
            self.problems.append(f"{rule}: {where}: {what}")
        return bool(ok)

    def done(self) -> None:
        if self.problems:
            raise StrictViolation(self.problems)


def json_object_text(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def nonblank(text: Any) -> bool:
    return isinstance(text, str) and bool(text.strip())


def openai_parts_ok(content: Any, text_type: str) -> bool:
    """OpenAI content: non-blank text, or a non-empty list of parts whose text parts are non-blank."""
    if isinstance(content, str):
        return bool(content.strip())
    if not isinstance(content, list) or not content:
        return False
    return all(
        isinstance(p, dict) and (p.get("type") != text_type or nonblank(p.get("text"))) for p in content
    )
