"""Who a call's bearer token names, and whether that caller may make the call now.

One per server, asked once per call by each edge. With a tenants file it is
reloaded by `reload()` (what SIGHUP calls): a file that does not load leaves the
one in effect as it was, and says why in one ERROR line; a good one applies to
calls that start after it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from pathlib import Path

from pioneer_grpc import errors, reasons
from pioneer_grpc.tenants.access import Access, access_of
from pioneer_grpc.tenants.callers import TENANT_HEADER, Caller, Role
from pioneer_grpc.tenants.limits import Quota, RateLimits
from pioneer_grpc.tenants.tenants_file import TENANT_NAME, Tenants, TenantsError, load_tenants

log = logging.getLogger(__name__)
_BEARER = b"Bearer "


class Authority:
    def __init__(
        self, tenants: Tenants, path: Path | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._tenants = tenants
        self._path = path
        self._rates = RateLimits(clock)
        self._rates.configure(tenants.limits)

    @classmethod
    def of(cls, token: str, tenants_file: Path | None) -> Authority | None:
        """From --tenants or --token (the configuration refuses both); None when neither: an open server."""
        if tenants_file is not None:
            return cls(load_tenants(tenants_file), tenants_file)
        if token:
            return cls(Tenants.single_token(token))
        return None

    @property
    def tenants(self) -> Tenants:
        return self._tenants

    def quota_of(self, tenant: str) -> Quota | None:
        """The tenant's caps as the file in effect says (a reload applies to the next call)."""
        return self._tenants.quotas.get(tenant)

    def caller_of(self, authorization: bytes) -> Caller | None:
        """The caller of an `authorization` header's value (`Bearer <token>`); None for any other."""
        if not authorization.startswith(_BEARER):
            return None
        return self._tenants.caller_of(authorization[len(_BEARER) :])

    def admit(self, caller: Caller, method: str) -> None:
        """Raises PermissionDenied for a viewer's write, RateLimited past the tenant's rate."""
        if not caller.role.writes and access_of(method) is Access.WRITE:
            raise errors.PermissionDenied(
                f"the token's role ({caller.role.value}) may only read; {method} writes: "
                "use a token with the agent or admin role",
                reason=reasons.ROLE_MAY_NOT_WRITE,
                metadata={"role": caller.role.value, "tenant": caller.tenant, "method": method},
            )
        wait, limit = self._rates.take(caller.tenant)
        if wait > 0.0 and limit is not None:
            raise errors.RateLimited(
                f"tenant {caller.tenant} is over its rate of {limit.requests_per_second:g} requests per "
                f"second (burst {limit.burst}); retry in {wait:.3f}s",
                retry_delay_seconds=wait,
                reason=reasons.TENANT_RATE_LIMITED,
                metadata={
                    "tenant": caller.tenant,
                    "requests_per_second": f"{limit.requests_per_second:g}",
                    "burst": str(limit.burst),
                    "retry_delay_ms": str(math.ceil(wait * 1000)),
                },
            )

    def reload(self) -> bool:
        """Reads the tenants file again; False (the old one stays, one ERROR line) when it does not load."""
        if self._path is None:
            log.info("nothing to reload: the server was started without --tenants")
            return False
        try:
            tenants = load_tenants(self._path)
        except TenantsError as exc:
            log.error("tenants file not reloaded, the one loaded before stays in effect: %s", exc.one_line)
            return False
        self._tenants = tenants
        self._rates.configure(tenants.limits)
        log.info(
            "tenants file %s reloaded: %d tokens, %d tenants, %d with a rate limit",
            self._path,
            len(tenants.entries),
            len(tenants.tenant_names),
            len(tenants.limits),
        )
        return True


def acting(caller: Caller, named: str) -> Caller:
    """The caller as its call acts: in the tenant `named` (TENANT_HEADER's value; "" names none).
    Only an admin may name a tenant other than its token's: PermissionDenied TENANT_NOT_YOURS
    otherwise, the same whether or not that tenant exists."""
    if not named or (named == caller.tenant and caller.role is not Role.ADMIN):
        return caller
    if not TENANT_NAME.fullmatch(named):
        raise errors.InvalidArgument.field(
            TENANT_HEADER, "must be a tenant name: 1-64 letters, digits, '.', '_' or '-'"
        )
    try:
        return caller.acting_in(named)
    except PermissionError:
        raise errors.PermissionDenied(
            f"the token may act in its own tenant only, and {TENANT_HEADER} names another: "
            "only an admin's token may name a tenant",
            reason=reasons.TENANT_NOT_YOURS,
            metadata={"tenant": named, "role": caller.role.value},
        ) from None
