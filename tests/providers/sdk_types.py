"""The official SDKs' request types as validators of a rendered body, with unknown keys forbidden.

Each provider's tests folder checks its body with its own SDK's types
(tests/providers/<provider>/rules.py, `check_types`). What they share is here.
"""

from __future__ import annotations

import sys

import typing_extensions
from pydantic import ConfigDict


def forbid_extra(prefixes: tuple[str, ...]) -> None:
    """Gives every TypedDict of the loaded modules under `prefixes` `extra="forbid"`, so pydantic
    refuses a key the SDK's request types do not declare."""
    for name, module in list(sys.modules.items()):
        if name.startswith(prefixes):
            for value in list(vars(module).values()):
                if typing_extensions.is_typeddict(value) and "__pydantic_config__" not in value.__dict__:
                    value.__pydantic_config__ = ConfigDict(extra="forbid")
