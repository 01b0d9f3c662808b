"""A caller: the tenant a bearer token belongs to, and the role it has there."""

from __future__ import annotations

import enum
from contextvars import ContextVar
from dataclasses import dataclass

# The tenant of `--token`, and of every call on a server that requires no token.
DEFAULT_TENANT = "default"

# The request header (gRPC metadata) by which an admin names the tenant a call acts in; any
# other caller may name its own tenant only.
TENANT_HEADER = "x-pioneer-tenant"


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
    # The tenant the call acts in: the token's, or the one an admin named (TENANT_HEADER).
    tenant: str
    role: Role
    # An admin's call that named its tenant: it acts in that tenant alone.
    addressed: bool = False
    # The token's own tenant when the call acts in another ("": `tenant`).
    token_tenant: str = ""

    def log_fields(self) -> dict[str, str]:
        """The access line's fields: the token's tenant, and the tenant an admin's call acted in."""
        fields = {"tenant": self.of_token}
        if self.token_tenant:
            fields["acting_tenant"] = self.tenant
        return fields

    @property
    def of_token(self) -> str:
        """The token's tenant, one the tenants file names: what metrics are labelled with."""
        return self.token_tenant or self.tenant

    @property
    def every_tenant(self) -> bool:
        """An admin's call that named no tenant: listings and watches see every tenant."""
        return self.role is Role.ADMIN and not self.addressed

    def acting_in(self, tenant: str) -> Caller:
        """The caller acting in `tenant`: an admin in any, anyone else in its own alone
        (PermissionError otherwise: the edge answers PERMISSION_DENIED)."""
        if self.role is not Role.ADMIN and tenant != self.tenant:
            raise PermissionError(tenant)
        return Caller(tenant, self.role, addressed=True, token_tenant=self.of_token)


# A server that requires no token serves everyone as this.
OPEN = Caller(DEFAULT_TENANT, Role.AGENT)

# Set by the edge once per call, after the token was resolved; tasks the call starts inherit it.
CALLER: ContextVar[Caller | None] = ContextVar("pioneer_caller", default=None)


def current_caller() -> Caller:
    """The caller of the call under way (OPEN on a server that requires no token)."""
    return CALLER.get() or OPEN
