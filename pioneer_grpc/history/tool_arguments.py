"""Tool call arguments as every provider's JSON takes them, and the repair of those stored before.

OpenAI takes arguments as text; Anthropic and Gemini take them as a JSON value
that the body carries. So arguments must be a JSON object that any strict
encoder and decoder accepts, or one odd model output fails every later round of
its thread. Python's `json.loads` accepts more than that, and these fail later:

- `NaN`, `Infinity`, `-Infinity` (not JSON: a strict encoder refuses them);
- numbers beyond a double's range, `1e999` or an integer of 400 digits (a double
  is what JSON numbers become in the providers' decoders; an integer past 4,300
  digits is even beyond what Python converts);
- a lone surrogate escape, `"\\ud800"` (no UTF-8 text holds it);
- nesting deeper than MAX_ARGUMENTS_DEPTH (json.loads recurses once per level).

Duplicate keys are valid JSON text (the last one wins where arguments are
decoded) and are accepted.

`arguments_problem` is the append's rule. `repaired_arguments` is the load's:
what an older version stored is sent with each non-finite or out-of-range number
as null and each lone surrogate as U+FFFD, and the load says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from pioneer_grpc.caps.history import MAX_ARGUMENTS_DEPTH
from pioneer_grpc.caps.walk import json_depth_over

REPLACEMENT = "\ufffd"
WHY = "arguments must be JSON every provider accepts"


class ArgumentsRefused(ValueError):
    """The arguments are not a JSON object every provider accepts; the message says why."""


def _refuse_constant(constant: str) -> Any:
    raise ArgumentsRefused(f"{WHY}: {constant} is not a JSON number")


def _out_of_range(text: str) -> ArgumentsRefused:
    shown = text if len(text) <= 24 else f"{text[:12]}...({len(text):,} characters)"
    return ArgumentsRefused(f"{WHY}: the number {shown} is beyond a double's range")


def _strict_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _out_of_range(text)
    return number


def _strict_int(text: str) -> int:
    if not math.isfinite(float(text)):  # before int(): past 4,300 digits it raises
        raise _out_of_range(text)
    return int(text)


def _lone_surrogate(value: Any) -> str | None:
    """A description of the first string (key or value) holding a lone surrogate, or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            texts = [item]
        elif isinstance(item, dict):
            texts = list(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            texts = []
            stack.extend(item)
        else:
            continue
        for text in texts:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"{WHY}: a string holds a lone surrogate escape \\u{ord(text[exc.start]):04x}"
    return None


def _load(
    arguments: str,
    parse_constant: Callable[[str], Any],
    parse_float: Callable[[str], Any],
    parse_int: Callable[[str], Any],
) -> dict[str, Any]:
    if json_depth_over(arguments, MAX_ARGUMENTS_DEPTH):
        raise ArgumentsRefused(f"{WHY}: they nest deeper than {MAX_ARGUMENTS_DEPTH} levels")
    try:
        value = json.loads(
            arguments, parse_constant=parse_constant, parse_float=parse_float, parse_int=parse_int
        )
    except json.JSONDecodeError as exc:
        raise ArgumentsRefused(
            f"arguments must be a JSON object; not valid JSON: {exc.msg} at char {exc.pos}"
        ) from None
    except RecursionError:
        raise ArgumentsRefused(f"{WHY}: they nest deeper than {MAX_ARGUMENTS_DEPTH} levels") from None
    if not isinstance(value, dict):
        raise ArgumentsRefused(f"arguments must be a JSON object, not a JSON {type(value).__name__}")
    return value


def parse_arguments(arguments: str) -> dict[str, Any]:
    """The arguments as a JSON object ("" is {}); ArgumentsRefused when a provider would refuse them."""
    if not arguments.strip():
        return {}
    value = _load(arguments, _refuse_constant, _strict_float, _strict_int)
    surrogate = _lone_surrogate(value)
    if surrogate is not None:
        raise ArgumentsRefused(surrogate)
    return value


def arguments_problem(arguments: str) -> str | None:
    """Why tool call arguments would be refused ("" means no arguments and is fine), or None."""
    try:
        parse_arguments(arguments)
    except ArgumentsRefused as exc:
        return str(exc)
    return None


def _sanitized(value: Any, replaced: list[str]) -> Any:
    if isinstance(value, _Dropped):
        replaced.append(value.what)
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            replaced.append("a lone surrogate")
            return "".join(REPLACEMENT if "\ud800" <= c <= "\udfff" else c for c in value)
        return value
    if isinstance(value, list):
        return [_sanitized(item, replaced) for item in value]
    if isinstance(value, dict):
        return {_sanitized(key, replaced): _sanitized(item, replaced) for key, item in value.items()}
    return value


class _Dropped:
    def __init__(self, what: str) -> None:
        self.what = what


def _lenient_float(text: str) -> Any:
    number = float(text)
    return number if math.isfinite(number) else _Dropped(f"the number {text[:24]}")


def _lenient_int(text: str) -> Any:
    return int(text) if math.isfinite(float(text)) else _Dropped(f"a {len(text):,}-character integer")


def repaired_arguments(arguments: str) -> tuple[str, list[str]] | None:
    """(arguments every provider accepts, what was replaced) for stored arguments a provider would
    refuse; None when they cannot be repaired (not a JSON object, too deep)."""
    try:
        value = _load(arguments, lambda c: _Dropped(c), _lenient_float, _lenient_int)
    except ArgumentsRefused:
        return None
    replaced: list[str] = []
    fixed = _sanitized(value, replaced)
    return json.dumps(fixed, ensure_ascii=False, allow_nan=False), replaced
