"""AIP-158 pages: page sizes with a default and a maximum, and opaque page tokens.

A token is the position after the last item of a page, bound to the list it
came from (`scope`): a token of another list, or of the same list with other
filters, is INVALID_ARGUMENT with reason INVALID_PAGE_TOKEN.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from pioneer_grpc import reasons
from pioneer_grpc.errors import FieldViolation, InvalidArgument


@dataclass(frozen=True)
class PageSize:
    default: int
    maximum: int

    def of(self, requested: int) -> int:
        """0 is the default; more than the maximum is the maximum (AIP-158); negative is an error."""
        InvalidArgument.raise_if(
            [FieldViolation("page_size", "must not be negative") if requested < 0 else None]
        )
        return self.default if requested == 0 else min(requested, self.maximum)


def encode_token(scope: str, after: list[Any]) -> str:
    text = json.dumps({"s": scope, "a": after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_token(token: str, scope: str) -> list[Any] | None:
    """The position a token resumes after; None for an empty token (the first page)."""
    if not token:
        return None
    try:
        found = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        found = None
    if not isinstance(found, dict) or found.get("s") != scope or not isinstance(found.get("a"), list):
        raise InvalidArgument.field(
            "page_token",
            "is not a next_page_token of this list with these filters; start again with an empty one",
            reason=reasons.INVALID_PAGE_TOKEN,
        )
    after: list[Any] = found["a"]
    return after
