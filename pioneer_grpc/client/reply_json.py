"""Reading a provider's response JSON: path-naming readers, the error they raise, and canonical JSON.

Every reader names the place it read (`choices[0].message.tool_calls[1].function`),
so an error says where the response did not hold what its API documents. The
Go, Rust and TypeScript clients read the same way and give the same codes and
paths (tests/data/replies holds the vectors all four are tested against).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

# ReplyError codes, the same in every client.
INVALID_ARGUMENT = "invalid_argument"  # the caller's: an unknown provider, an empty turn id, a negative round
NOT_JSON = "not_json"  # the response is not JSON text, or not a JSON object
ERROR_BODY = "error_body"  # the provider's error body, or a response that failed
MISSING = "missing"  # a field the reply needs is absent or null
WRONG_TYPE = "wrong_type"  # a field of another type than the API documents
UNSUPPORTED = "unsupported"  # a content kind or state that no entry can hold
BAD_ARGUMENTS = "bad_arguments"  # tool call arguments that are not a JSON object

MAX_COUNT = 2**31 - 1  # ProviderUsage's fields are int32


class ReplyError(ValueError):
    """A response that cannot be turned into entries: `code` (above) and the `path` it names."""

    def __init__(self, code: str, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.code = code
        self.path = path


def child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:24]} is beyond a double's range")
    return number


def _finite_int(text: str) -> int:
    if not math.isfinite(float(text)):
        raise ValueError(f"the number {text[:24]}... is beyond a double's range")
    return int(text)


def loads(text: str | bytes | bytearray) -> Any:
    """JSON as every client reads it: a number beyond a double's range is no JSON they take."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_finite_int)


def parse(response: str | bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    """The response as a JSON object: JSON text (str or UTF-8 bytes), or already parsed."""
    if isinstance(response, Mapping):
        return response
    if not isinstance(response, str | bytes | bytearray):
        raise ReplyError(
            NOT_JSON, "", f"a response is JSON text or a parsed object, not {type(response).__name__}"
        )
    try:
        value = loads(response)
    except (ValueError, RecursionError) as exc:
        raise ReplyError(NOT_JSON, "", f"the response is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ReplyError(NOT_JSON, "", f"the response is a JSON {_kind(value)}, not an object")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _value(body: Mapping[str, Any] | None, key: str, path: str, required: bool) -> Any:
    value = None if body is None else body.get(key)
    if value is None and required:
        raise ReplyError(MISSING, child(path, key), "absent")
    return value


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    raise ReplyError(WRONG_TYPE, path, f"an object was expected, not a {_kind(value)}")


def _array(value: Any, path: str) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    raise ReplyError(WRONG_TYPE, path, f"an array was expected, not a {_kind(value)}")


def _text(value: Any, path: str) -> str:
    if isinstance(value, str):
        return value
    raise ReplyError(WRONG_TYPE, path, f"a string was expected, not a {_kind(value)}")


def obj(body: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    return _object(_value(body, key, path, True), child(path, key))


def opt_obj(body: Mapping[str, Any] | None, key: str, path: str) -> Mapping[str, Any] | None:
    value = _value(body, key, path, False)
    return None if value is None else _object(value, child(path, key))


def array(body: Mapping[str, Any], key: str, path: str) -> list[Any]:
    return _array(_value(body, key, path, True), child(path, key))


def opt_array(body: Mapping[str, Any] | None, key: str, path: str) -> list[Any]:
    """The array, or [] when absent or null."""
    value = _value(body, key, path, False)
    return [] if value is None else _array(value, child(path, key))


def text(body: Mapping[str, Any], key: str, path: str) -> str:
    return _text(_value(body, key, path, True), child(path, key))


def opt_text(body: Mapping[str, Any] | None, key: str, path: str) -> str | None:
    value = _value(body, key, path, False)
    return None if value is None else _text(value, child(path, key))


def name(body: Mapping[str, Any], key: str, path: str) -> str:
    """A required string that must not be empty (an id, a tool name, a type)."""
    value = text(body, key, path)
    if not value:
        raise ReplyError(MISSING, child(path, key), "empty")
    return value


def item(items: list[Any], index: int, path: str) -> Mapping[str, Any]:
    value = items[index]
    if isinstance(value, Mapping):
        return value
    raise ReplyError(WRONG_TYPE, child(path, index), f"an object was expected, not a {_kind(value)}")


def count(body: Mapping[str, Any] | None, key: str, path: str) -> int | None:
    """A token count: a JSON number holding a whole number from 0 to 2^31 - 1, or None when absent."""
    value = None if body is None else body.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
        or not 0 <= value <= MAX_COUNT
    ):
        raise ReplyError(WRONG_TYPE, child(path, key), f"a token count from 0 to {MAX_COUNT} was expected")
    return int(value)


def checked_sum(path: str, *counts: int | None) -> int:
    total = sum(c for c in counts if c is not None)
    if total > MAX_COUNT:
        raise ReplyError(WRONG_TYPE, path, f"the counts add up past {MAX_COUNT}")
    return total


def arguments_text(value: Any, path: str) -> str:
    """Arguments a provider gives as JSON text: kept as given once known to be a JSON object ("" is none)."""
    if value is None:
        raise ReplyError(MISSING, path, "absent")
    if not isinstance(value, str):
        raise ReplyError(WRONG_TYPE, path, f"a string was expected, not a {_kind(value)}")
    if value.strip():
        try:
            parsed = loads(value)
        except (ValueError, RecursionError) as exc:
            raise ReplyError(BAD_ARGUMENTS, path, f"the arguments are not JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise ReplyError(BAD_ARGUMENTS, path, f"the arguments are a JSON {_kind(parsed)}, not an object")
    return value


def arguments_object(value: Any, path: str) -> str:
    """Arguments a provider gives as a JSON object, as canonical JSON text (see `canonical_json`)."""
    if value is None:
        raise ReplyError(MISSING, path, "absent")
    if not isinstance(value, Mapping):
        raise ReplyError(BAD_ARGUMENTS, path, f"the arguments are a JSON {_kind(value)}, not an object")
    return canonical_json(value, path)


def canonical_json(value: Any, path: str = "") -> str:
    """JSON text every client writes alike for a value (RFC 8785's form): no spaces, keys sorted by
    UTF-16 code units, numbers as JavaScript writes doubles, strings escaping only what JSON must."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return _number(value, path)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        keys = list(value)
        if not all(isinstance(key, str) for key in keys):
            raise ReplyError(BAD_ARGUMENTS, path, "an object key is not a string")
        keys.sort(key=utf16_order)
        return "{" + ",".join(f"{_string(k)}:{canonical_json(value[k], child(path, k))}" for k in keys) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical_json(v, child(path, i)) for i, v in enumerate(value)) + "]"
    raise ReplyError(BAD_ARGUMENTS, path, f"a {type(value).__name__} is not a JSON value")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(value: str) -> str:
    out = ['"']
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char < " ":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _number(value: float, path: str) -> str:
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ReplyError(BAD_ARGUMENTS, path, "a number beyond a double's range")
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    digits, point = shortest_digits(repr(abs(number)))
    return sign + es_number(digits, point)


def shortest_digits(shortest: str) -> tuple[str, int]:
    """The digits d1..dk of a shortest round-trip repr ("1.5e-07", "123.0"), and n: value 0.d1..dk x 10^n."""
    mantissa, _, exponent = shortest.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + int(exponent or 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point


def es_number(digits: str, n: int) -> str:
    """Number::toString of ECMAScript (what JSON.stringify writes) from the digits and n above."""
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return f"{digits[:n]}.{digits[n:]}"
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    exponent = n - 1
    sign = "+" if exponent > 0 else "-"
    mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{mantissa}e{sign}{abs(exponent)}"


def utf16_order(key: str) -> bytes:
    """A sort key ordering strings by UTF-16 code units, as JavaScript sorts them."""
    return key.encode("utf-16-be", "surrogatepass")
