"""The official SDKs' request types as validators of a rendered body, with unknown keys forbidden.

Each provider's tests folder checks its body with its own SDK's types
(tests/providers/<provider>/rules.py, `check_types`). What they share is here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import typing_extensions
from pydantic import ConfigDict, TypeAdapter


def forbid_extra(prefixes: tuple[str, ...]) -> None:
    """Gives every TypedDict of the loaded modules under `prefixes` `extra="forbid"`, so pydantic
    refuses a key the SDK's request types do not declare."""
    for name, module in list(sys.modules.items()):
        if name.startswith(prefixes):
            for value in list(vars(module).values()):
                if typing_extensions.is_typeddict(value) and "__pydantic_config__" not in value.__dict__:
                    value.__pydantic_config__ = ConfigDict(extra="forbid")


def request_types(
    load: Callable[[], Any], prefixes: tuple[str, ...]
) -> Callable[[dict[str, Any], str], None]:
    """A check of a body against the request TypedDict `load` imports (on first use, so the SDK is
    imported only by the tests that check), every TypedDict under `prefixes` forbidding extra keys.
    It raises a pydantic ValidationError when the types refuse the body."""

    @cache
    def adapter() -> TypeAdapter[Any]:
        params = load()
        forbid_extra(prefixes)
        return TypeAdapter(params)

    def check(body: dict[str, Any], model: str) -> None:
        adapter().validate_python(body)

    return check
