"""Driver failures become domain errors in one place (store/failures.py), with stable reasons."""

from __future__ import annotations

import errno
import sqlite3

import pytest
from sqlalchemy import exc as sa_exc

from pioneer_grpc import errors
from pioneer_grpc.store.failures import describe, domain_error


class _PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__("value (secret) violates something")
        self.sqlstate = sqlstate


def _sqlite_error(name: str, message: str) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorname = name
    return error


def _wrapped(orig: BaseException, invalidated: bool = False) -> sa_exc.DBAPIError:
    return sa_exc.DBAPIError(
        "INSERT INTO t VALUES (?)", ("secret",), orig, connection_invalidated=invalidated
    )


CASES = [
    (_wrapped(_PgError("08006")), errors.Unavailable, "DATABASE_UNAVAILABLE"),
    (_wrapped(_PgError("57P01")), errors.Unavailable, "DATABASE_UNAVAILABLE"),
    (_wrapped(_PgError("53100")), errors.ResourceExhausted, "DISK_FULL"),
    (_wrapped(_PgError("55P03")), errors.Unavailable, "LOCK_TIMEOUT"),
    (_wrapped(_PgError("40P01")), errors.Aborted, "TRANSACTION_CONFLICT"),
    (_wrapped(_PgError("53300")), errors.Unavailable, "DATABASE_BUSY"),
    (
        _wrapped(_sqlite_error("SQLITE_FULL", "database or disk is full")),
        errors.ResourceExhausted,
        "DISK_FULL",
    ),
    (_wrapped(_sqlite_error("SQLITE_BUSY", "database is locked")), errors.Unavailable, "LOCK_TIMEOUT"),
    (
        _wrapped(_sqlite_error("SQLITE_IOERR_WRITE", "disk I/O error")),
        errors.Unavailable,
        "DATABASE_UNAVAILABLE",
    ),
    (_wrapped(sqlite3.OperationalError("database is locked")), errors.Unavailable, "LOCK_TIMEOUT"),
    (_wrapped(RuntimeError("gone"), invalidated=True), errors.Unavailable, "DATABASE_UNAVAILABLE"),
    (sa_exc.TimeoutError("QueuePool limit reached"), errors.Unavailable, "DATABASE_BUSY"),
    (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), errors.Unavailable, "DATABASE_UNAVAILABLE"),
    (OSError(errno.ENOSPC, "No space left on device"), errors.ResourceExhausted, "DISK_FULL"),
]


@pytest.mark.parametrize(("error", "kind", "reason"), CASES)
def test_infrastructure_failures_are_named(error, kind, reason):
    mapped = domain_error(error)
    assert isinstance(mapped, kind)
    assert mapped.reason == reason
    assert "secret" not in mapped.message
    assert "secret" not in describe(error)


def test_a_bug_stays_a_bug():
    assert domain_error(_wrapped(_PgError("23505"))) is None  # unique violation: the caller's business
    assert domain_error(ValueError("x")) is None
