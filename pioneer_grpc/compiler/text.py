"""Small text helpers shared by the renderers. Lengths are in characters (code points)."""

from __future__ import annotations

import re

# C0 controls but tab and newline (carriage returns are newlines by then), DEL, and C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
REPLACEMENT = "\ufffd"


def sanitize(text: str) -> str:
    """Normalise newlines, drop a leading byte-order mark, trim surrounding whitespace."""
    text = text.removeprefix("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def clip(text: str, max_chars: int) -> str:
    return text[: max(max_chars, 0)]


def clip_with_ellipsis(text: str, max_chars: int, ellipsis: str = "...") -> str:
    """`text` if it fits, else a prefix plus `ellipsis`; never longer than `max_chars`."""
    if len(text) <= max_chars:
        return text
    if max_chars <= len(ellipsis):
        return clip(text, max_chars)
    return text[: max_chars - len(ellipsis)].rstrip() + ellipsis


def one_line(text: str) -> str:
    """Collapse line breaks so caller text cannot start a line of its own."""
    return " ".join(text.split())


def replace_controls(text: str) -> tuple[str, int]:
    """Each control character but tab and newline as U+FFFD (same length), and how many there were."""
    return _CONTROL.subn(REPLACEMENT, text)
