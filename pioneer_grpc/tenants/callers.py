"""A caller: the tenant a bearer token belongs to, and the role it has there."""

from __future__ import annotations

import enum
from contextvars import ContextVar
from dataclasses import dataclass

# The tenant of `--token`, and of every call on a server that requires no token.
DEFAULT_TENANT = "default"


class Role(enum.Enum):
    # Reads and writes its own tenant's threads.
    AGENT = "agent"
    # Reads only (the console, watches, every read RPC).
    VIEWER = "viewer"
    # Reads and writes every tenant's threads.
    ADMIN = "admin"

    @property
    def writes(self) -> bool:
        return self is not Role.VIEWER


@dataclass(frozen=True, slots=True)
class Caller:
    tenant: str
    role: Role


# A server that requires no token serves everyone as this.
OPEN = Caller(DEFAULT_TENANT, Role.AGENT)

# Set by the edge once per call, after the token was resolved; tasks the call starts inherit it.
CALLER: ContextVar[Caller | None] = ContextVar("pioneer_caller", default=None)


def current_caller() -> Caller:
    """The caller of the call under way (OPEN on a server that requires no token)."""
    return CALLER.get() or OPEN
