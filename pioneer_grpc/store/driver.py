"""A statement every round, append, completion or load makes, run on the database's own driver.

For a statement of one or a few rows, SQLAlchemy's execution (cache key, context,
result wrapping) costs several times the driver's own work. `Direct` compiles a
built statement once for each database it is run on and hands it to the driver:
- SQLite: on a plain sqlite3 connection (the store's own thread, store/runner.py);
- PostgreSQL: on the asyncpg connection under SQLAlchemy's adapter, from inside
  the greenlet the unit runs in (SQLAlchemy's own bridge, store/runner.py), in the
  transaction SQLAlchemy's adapter begins lazily: begun here when this is the
  unit's first statement, as SQLAlchemy would begin it.
On any other connection (aiosqlite) it executes the statement as usual.

Both ways must write and read the same values, which is checked when one is built:
- a parameter SQLAlchemy converts (a datetime, a boolean) goes through the very
  converter SQLAlchemy would use for that database;
- a column SQLAlchemy would convert on the way out is refused, as are values
  SQLAlchemy would compute itself (Python-side column defaults) and expanding
  lists, which change the SQL text with each call.
A driver error on PostgreSQL leaves as SQLAlchemy's own execution leaves it (the
same exception classes, a lost connection invalidated), so store/failures.py
names it the same.
tests/store/test_direct_statements.py and test_postgres_statements.py run each
statement both ways.
"""

from __future__ import annotations

import sqlite3
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_connection
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.engine.interfaces import BindTyping
from sqlalchemy.util import await_only

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
_DIALECTS: dict[str, Dialect] = {
    SQLITE: sqlite.dialect(),
    POSTGRESQL: postgresql.asyncpg.dialect(),  # type: ignore[no-untyped-call]
}


def postgresql_text(statement: Any) -> str:
    """A built statement as PostgreSQL's SQL with `:name` parameters (no casts on them): a part
    to write into a textual statement (`text`), which binds those names."""
    dialect = postgresql.psycopg2.dialect(paramstyle="named")  # type: ignore[no-untyped-call]
    dialect.bind_typing = BindTyping.NONE
    return str(statement.compile(dialect=dialect))


class _Compiled:
    """A statement compiled for one dialect: its SQL, each positional parameter's name and
    converter, and its columns' names (None: the driver's, for a textual statement)."""

    def __init__(self, statement: Any, column_keys: Sequence[str], dialect: Dialect) -> None:
        def impl(type_: Any) -> Any:
            return type_.dialect_impl(dialect)

        compiled = statement.compile(dialect=dialect, column_keys=list(column_keys) or None)
        columns = list(getattr(statement, "exported_columns", ()))
        refused = [c.name for c in columns if impl(c.type).result_processor(dialect, None)]
        refused += [c.name for c in (*compiled.insert_prefetch, *compiled.update_prefetch)]
        refused += [name for name, bind in compiled.binds.items() if bind.expanding]
        if refused:
            raise ValueError(f"SQLAlchemy must read, compute or expand these itself: {refused}")
        self.sql = str(compiled)
        self.binds: tuple[tuple[str, Callable[[Any], Any] | None], ...] = tuple(
            (name, impl(compiled.binds[name].type).bind_processor(dialect))
            for name in compiled.positiontup or ()
        )
        self.row: Any = namedtuple("Row", [c.name for c in columns]) if columns else None

    def values(self, params: Mapping[str, Any]) -> list[Any]:
        return [params[name] if convert is None else convert(params[name]) for name, convert in self.binds]


class Direct:
    """`statement` compiled once for each of `dialects`; an INSERT names the `column_keys` its
    parameters carry."""

    def __init__(
        self,
        statement: Any,
        column_keys: Sequence[str] = (),
        dialects: Sequence[str] = (SQLITE, POSTGRESQL),
    ) -> None:
        self.statement = statement
        self.dialects = tuple(dialects)
        self._sqlite = _Compiled(statement, column_keys, _DIALECTS[SQLITE]) if SQLITE in dialects else None
        self._pg = (
            _Compiled(statement, column_keys, _DIALECTS[POSTGRESQL]) if POSTGRESQL in dialects else None
        )

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        """Every row, each with its columns by name (as SQLAlchemy's rows have them); [] for none."""
        driver = conn.connection.dbapi_connection
        if self._sqlite is not None and isinstance(driver, sqlite3.Connection):
            found = driver.execute(self._sqlite.sql, self._sqlite.values(params)).fetchall()
            return [self._sqlite.row._make(row) for row in found]
        if self._pg is not None and isinstance(driver, AsyncAdapt_asyncpg_connection):
            return _on_asyncpg(conn, driver, self._pg, params)
        result = conn.execute(self.statement, dict(params))
        return list(result) if result.returns_rows else []

    def first(self, conn: Connection, params: Mapping[str, Any]) -> Any:
        found = self.rows(conn, params)
        return found[0] if found else None


def _on_asyncpg(
    conn: Connection, adapted: AsyncAdapt_asyncpg_connection, compiled: _Compiled, params: Mapping[str, Any]
) -> list[Any]:
    values = compiled.values(params)
    try:
        try:
            if adapted._transaction is None and not adapted.autocommit:
                # SQLAlchemy's adapter begins on its first statement; this may be the first.
                await_only(adapted._start_transaction())  # type: ignore[no-untyped-call]
            driver: Any = adapted._connection
            records = await_only(driver.fetch(compiled.sql, *values))
        except Exception as error:
            adapted._handle_exception(error)  # raises the DBAPI error SQLAlchemy's cursor would raise
            raise
    except Exception as error:
        # As SQLAlchemy's execution leaves it: its exception class, a lost connection invalidated.
        conn._handle_dbapi_exception(error, compiled.sql, values, None, None)
        raise
    if not records:
        return []
    if compiled.row is None:  # a textual statement: the columns it names
        compiled.row = namedtuple("Row", list(records[0].keys()))  # type: ignore[misc]
    return [compiled.row._make(record.values()) for record in records]
