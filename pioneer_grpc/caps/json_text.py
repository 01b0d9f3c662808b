"""What Python's json module accepts but no provider's JSON does: lone surrogates, oversized integers.

`json.loads` turns a `\\ud800` escape without its pair into a str that cannot
be encoded as UTF-8, so a body holding it fails only when it is sent; and an
integer longer than Python's int-string limit (4,300 digits) raises ValueError
instead of JSONDecodeError. Both are properties of a request's content, to be
refused as INVALID_ARGUMENT where the JSON is read.
"""

from __future__ import annotations

import re
from typing import Any

# Any \\uD800-\\uDFFF escape; only texts holding one can decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
LONE_SURROGATE = "a \\u escape names half of a UTF-16 surrogate pair without the other half"


def _has_unpaired(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_unpaired(k) or _has_unpaired(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_unpaired(item) for item in value)
    return False


def lone_surrogate_in(text: str, value: Any) -> bool:
    """Whether `value`, decoded from the JSON `text`, holds a string with a lone surrogate."""
    return _SURROGATE_ESCAPE.search(text) is not None and _has_unpaired(value)
