"""Whose threads a call works on: the caller's tenant (tenants/ `current_caller`).

A thread is named by its tenant and its id: two tenants may each have thread "t1". Every
memory the use cases keep of a thread (kept loads, models seen, round prefixes, recent
rounds) is keyed by `ThreadKey`, so one tenant's thread never answers for another's;
the store is reached through the tenant's view (`ServiceContext.store`).
"""

from __future__ import annotations

from pioneer_grpc.tenants import current_caller

# (tenant, thread id)
ThreadKey = tuple[str, str]


def thread_key(thread_id: str) -> ThreadKey:
    """The call's thread `thread_id`: of the tenant the call acts in."""
    return current_caller().tenant, thread_id


def sees_every_tenant() -> bool:
    """An admin's call that names no tenant: listings and watches read every tenant's threads."""
    return current_caller().every_tenant
