"""Who calls: tenants, roles and per-tenant request rates, from the tenants file or --token.

Pure: no transport, no database. Both edges ask `Authority` once per call who
the bearer token names (`caller_of`) and whether that caller may make this call
now (`admit`), then set `CALLER` for the rest of the call.
"""

from __future__ import annotations

from pioneer_grpc.tenants.access import METHOD_ACCESS, Access, access_of
from pioneer_grpc.tenants.authority import Authority, acting
from pioneer_grpc.tenants.callers import (
    CALLER,
    DEFAULT_TENANT,
    OPEN,
    TENANT_HEADER,
    Caller,
    Role,
    current_caller,
)
from pioneer_grpc.tenants.limits import Quota, RateLimit, RateLimits
from pioneer_grpc.tenants.tenants_file import Tenants, TenantsError, load_tenants, parse_tenants

__all__ = [
    "CALLER",
    "DEFAULT_TENANT",
    "METHOD_ACCESS",
    "OPEN",
    "TENANT_HEADER",
    "Access",
    "Authority",
    "Caller",
    "Quota",
    "RateLimit",
    "RateLimits",
    "Role",
    "Tenants",
    "TenantsError",
    "access_of",
    "acting",
    "current_caller",
    "load_tenants",
    "parse_tenants",
]
