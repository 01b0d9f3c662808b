"""Database failures named for what they are: the one mapping from driver exceptions to domain errors.

SQLAlchemy, sqlite3, aiosqlite and asyncpg each raise their own classes; a client
only needs to know whether to retry. Connection loss and an unreachable server are
UNAVAILABLE (retry), a full disk RESOURCE_EXHAUSTED, a lock or connection wait that
ran out UNAVAILABLE, a serialization conflict ABORTED. Messages are fixed text plus
the driver's error code: a driver's own message can quote row values.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable

from sqlalchemy import exc as sa_exc

from pioneer_grpc.errors import Aborted, PioneerError, ResourceExhausted, Unavailable, describe
from pioneer_grpc.reasons import (
    DATABASE_BUSY,
    DATABASE_OUT_OF_MEMORY,
    DATABASE_RESOURCES,
    DATABASE_TIMEOUT,
    DATABASE_UNAVAILABLE,
    DISK_FULL,
    LOCK_TIMEOUT,
    TRANSACTION_CONFLICT,
)

__all__ = ["describe", "domain_error", "unit_timed_out"]
_RETRY = "; retrying is safe"
_Make = Callable[[str], PioneerError]


def _unavailable(what: str, code: str = "", reason: str = DATABASE_UNAVAILABLE) -> Unavailable:
    suffix = f" ({code})" if code else ""
    metadata = {"code": code} if code else {}
    return Unavailable(f"database {what}{suffix}{_RETRY}", reason=reason, metadata=metadata)


def unit_timed_out(seconds: float) -> Unavailable:
    """A unit of database work that has not ended within the bound its caller waits (store/work.py)."""
    return _unavailable(f"did not finish the work within {seconds:g}s", "unit_timeout", DATABASE_TIMEOUT)


def _disk_full(code: str) -> ResourceExhausted:
    return ResourceExhausted(
        f"database disk is full ({code}); nothing was written", reason=DISK_FULL, metadata={"code": code}
    )


# PostgreSQL SQLSTATEs by exact code, then by class (first two characters).
_PG_CODES: dict[str, _Make] = {
    "53100": _disk_full,
    "53200": lambda c: ResourceExhausted(f"database out of memory ({c})", reason=DATABASE_OUT_OF_MEMORY),
    "53300": lambda c: _unavailable("has too many connections", c, DATABASE_BUSY),
    "55P03": lambda c: _unavailable("lock wait timed out", c, LOCK_TIMEOUT),
    "57014": lambda c: _unavailable("statement timed out", c, DATABASE_TIMEOUT),
    "40001": lambda c: Aborted(f"transaction conflict ({c}){_RETRY}", reason=TRANSACTION_CONFLICT),
    "40P01": lambda c: Aborted(f"deadlock detected ({c}){_RETRY}", reason=TRANSACTION_CONFLICT),
    "25006": lambda c: _unavailable("is read-only", c),
}
_PG_CLASSES: dict[str, _Make] = {
    "08": lambda c: _unavailable("connection failed", c),
    "57": lambda c: _unavailable("is shutting down or starting", c),
    "58": lambda c: _unavailable("system error", c),
    "53": lambda c: ResourceExhausted(f"database out of resources ({c})", reason=DATABASE_RESOURCES),
}
# sqlite3 extended error names by prefix.
_SQLITE_PREFIXES: tuple[tuple[str, _Make], ...] = (
    ("SQLITE_FULL", _disk_full),
    ("SQLITE_BUSY", lambda c: _unavailable("is locked by another writer", c, LOCK_TIMEOUT)),
    ("SQLITE_LOCKED", lambda c: _unavailable("is locked by another writer", c, LOCK_TIMEOUT)),
    ("SQLITE_IOERR", lambda c: _unavailable("file cannot be read or written", c)),
    ("SQLITE_CANTOPEN", lambda c: _unavailable("file cannot be opened", c)),
    ("SQLITE_READONLY", lambda c: _unavailable("file is read-only", c)),
    ("SQLITE_PROTOCOL", lambda c: _unavailable("lock protocol failed", c, LOCK_TIMEOUT)),
)


def _from_sqlstate(code: str) -> PioneerError | None:
    make = _PG_CODES.get(code) or _PG_CLASSES.get(code[:2])
    return make(code) if make else None


def _from_sqlite(error: sqlite3.Error) -> PioneerError | None:
    name = getattr(error, "sqlite_errorname", "") or ""
    for prefix, make in _SQLITE_PREFIXES:
        if name.startswith(prefix):
            return make(name)
    text = str(error).lower()
    # Errors raised before a statement ran (e.g. by aiosqlite) carry no code.
    if "database is locked" in text:
        return _unavailable("is locked by another writer", "SQLITE_BUSY", LOCK_TIMEOUT)
    if "disk is full" in text:
        return _disk_full("SQLITE_FULL")
    return None


def _from_os_error(error: OSError) -> PioneerError:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return _disk_full(errno.errorcode.get(error.errno or 0, "ENOSPC"))
    name = errno.errorcode.get(error.errno or 0, "") if error.errno else type(error).__name__
    return _unavailable("cannot be reached", name)


def _driver_error(error: BaseException) -> PioneerError | None:
    sqlstate = getattr(error, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate:
        return _from_sqlstate(sqlstate)
    if isinstance(error, sqlite3.Error):
        return _from_sqlite(error)
    if isinstance(error, OSError):
        return _from_os_error(error)
    if isinstance(error, TimeoutError):
        return _unavailable("did not answer in time", "timeout", DATABASE_TIMEOUT)
    return None


def _is_connection_loss(error: BaseException) -> bool:
    """asyncpg's 'connection was closed in the middle of operation' and friends (no SQLSTATE)."""
    module = type(error).__module__
    name = type(error).__name__
    return module.startswith("asyncpg") and ("Connection" in name or name == "InterfaceError")


def domain_error(error: BaseException) -> PioneerError | None:
    """The domain error a database failure stands for, or None when it is not an infrastructure failure."""
    if isinstance(error, sa_exc.TimeoutError):
        return _unavailable("is busy: no connection became free in time", "pool_timeout", DATABASE_BUSY)
    if isinstance(error, sa_exc.DBAPIError):
        orig = error.orig
        mapped = _driver_error(orig) if orig is not None else None
        if mapped is None and orig is not None:
            mapped = _driver_error(orig.__cause__) if orig.__cause__ is not None else None
        lost = error.connection_invalidated or (orig is not None and _is_connection_loss(orig))
        if mapped is None and lost:
            mapped = _unavailable("connection was lost", "connection_lost")
        return mapped
    if _is_connection_loss(error):
        return _unavailable("connection was lost", "connection_lost")
    return _driver_error(error)
