"""Stable `google.rpc.ErrorInfo.reason` values (domain "pioneer.v1") that clients program against.

A reason never changes meaning once published; new ones are added here. Each
error class has a generic default (INVALID_ARGUMENT, NOT_FOUND, ...); a raise
site names a specific one when a client could act on the difference.
This module imports nothing, so the Python client ships it as it is.
"""

from __future__ import annotations

# NOT_FOUND
THREAD_NOT_FOUND = "THREAD_NOT_FOUND"
TURN_NOT_FOUND = "TURN_NOT_FOUND"
MANIFEST_EVENT_NOT_FOUND = "MANIFEST_EVENT_NOT_FOUND"
# The turn exists but no compile has named it yet.
TURN_MANIFEST_NOT_FOUND = "TURN_MANIFEST_NOT_FOUND"

# ALREADY_EXISTS (metadata names the resource and the fields that differ)
THREAD_CONFLICT = "THREAD_CONFLICT"
ENTRY_CONFLICT = "ENTRY_CONFLICT"
# A fork or import names a thread id that is taken: choose another, or delete that thread first.
THREAD_EXISTS = "THREAD_EXISTS"

# FAILED_PRECONDITION
TURN_COMPLETED = "TURN_COMPLETED"
# A fork names a turn still open: complete it (or fork at an earlier one).
TURN_NOT_COMPLETED = "TURN_NOT_COMPLETED"
# INVALID_ARGUMENT: an import stream whose format version this server does not know (docs/export-format.md).
UNSUPPORTED_EXPORT_VERSION = "UNSUPPORTED_EXPORT_VERSION"
# The turn's latest tool calls have no results yet: append them, then retry.
TOOL_RESULTS_PENDING = "TOOL_RESULTS_PENDING"
# The workspace root cannot hold the files (a file is in its place, no permission, a read-only or full
# disk); metadata names the errno. Not retryable unchanged: fix the folder first.
WORKSPACE_UNUSABLE = "WORKSPACE_UNUSABLE"
# previous_round_usage on a turn that has had no round yet: nothing to record it on.
NO_PREVIOUS_ROUND = "NO_PREVIOUS_ROUND"

# PERMISSION_DENIED
WORKSPACE_OUTSIDE_HOME = "WORKSPACE_OUTSIDE_HOME"
PATH_OUTSIDE_WORKSPACE = "PATH_OUTSIDE_WORKSPACE"
NO_RUNTIME_HOME = "NO_RUNTIME_HOME"
# The token's role (viewer) may only read, and the method writes (metadata: role, tenant, method).
ROLE_MAY_NOT_WRITE = "ROLE_MAY_NOT_WRITE"
# The call named a tenant (x-pioneer-tenant) other than its token's, and the token is not an admin's
# (metadata: tenant, the token's role).
TENANT_NOT_YOURS = "TENANT_NOT_YOURS"

# INVALID_ARGUMENT (BadRequest lists the fields)
INVALID_ARGUMENT = "INVALID_ARGUMENT"
MODEL_REQUIRED = "MODEL_REQUIRED"
INVALID_PAGE_TOKEN = "INVALID_PAGE_TOKEN"

# RESOURCE_EXHAUSTED
OBSERVER_TOO_SLOW = "OBSERVER_TOO_SLOW"
# The server holds max_connections connections: retry later, or on a connection already open.
TOO_MANY_CONNECTIONS = "TOO_MANY_CONNECTIONS"
# The tenant's requests per second (tenants file) are used up: RetryInfo says when to retry.
TENANT_RATE_LIMITED = "TENANT_RATE_LIMITED"
# The tenant holds as many threads, or as many bytes of entries, as the tenants file allows (a
# QuotaFailure and the metadata give the cap and what is held).
TENANT_QUOTA_EXCEEDED = "TENANT_QUOTA_EXCEEDED"

# UNAVAILABLE
SHUTTING_DOWN = "SHUTTING_DOWN"

# The database, not the request, is at fault (the store names each failure: store/failures.py).
# UNAVAILABLE: the database cannot be reached or written right now; retrying is safe.
DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
DATABASE_BUSY = "DATABASE_BUSY"
DATABASE_TIMEOUT = "DATABASE_TIMEOUT"
LOCK_TIMEOUT = "LOCK_TIMEOUT"
# RESOURCE_EXHAUSTED
DISK_FULL = "DISK_FULL"
DATABASE_OUT_OF_MEMORY = "DATABASE_OUT_OF_MEMORY"
DATABASE_RESOURCES = "DATABASE_RESOURCES"
# ABORTED
TRANSACTION_CONFLICT = "TRANSACTION_CONFLICT"
# Every reason above: an RPC that meets one tells the health probe to look at the database now.
INFRASTRUCTURE_REASONS = frozenset(
    {
        DATABASE_UNAVAILABLE,
        DATABASE_BUSY,
        DATABASE_TIMEOUT,
        LOCK_TIMEOUT,
        DISK_FULL,
        DATABASE_OUT_OF_MEMORY,
        DATABASE_RESOURCES,
        TRANSACTION_CONFLICT,
    }
)

# ABORTED: a DeleteThread's etag is not the thread's (it changed since it was read). Read it again.
ETAG_MISMATCH = "ETAG_MISMATCH"

# UNAUTHENTICATED
UNAUTHENTICATED = "UNAUTHENTICATED"

# Codes a client may retry unchanged. UNAVAILABLE and ABORTED: the same call can
# succeed later; RESOURCE_EXHAUSTED from a watch resumes from the last event id.
RETRYABLE_CODES = ("UNAVAILABLE", "ABORTED", "RESOURCE_EXHAUSTED")
# Reasons of those codes that the same call meets again: read first, then call anew.
NOT_RETRYABLE_REASONS = frozenset({ETAG_MISMATCH})
