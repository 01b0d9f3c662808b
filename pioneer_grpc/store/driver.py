"""A statement every round or load makes, run on SQLite's own driver connection.

For a statement of one or a few rows, SQLAlchemy's execution (cache key, context,
result wrapping) costs several times SQLite's own work. `Direct` compiles a built
statement once for SQLite and, on a plain sqlite3 connection (the store's own
thread, store/runner.py), hands it to the driver; on any other connection
(PostgreSQL, aiosqlite) it executes the statement as usual.

Both ways must write and read the same values, which is checked when one is built:
- a parameter SQLAlchemy converts (a datetime, a boolean) goes through the very
  converter SQLAlchemy would use for SQLite;
- a column SQLAlchemy would convert on the way out is refused, as are values
  SQLAlchemy would compute itself (Python-side column defaults) and expanding
  lists, which change the SQL text with each call.
"""

from __future__ import annotations

import sqlite3
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

_DIALECT = sqlite.dialect()


def _impl(type_: Any) -> Any:
    return type_.dialect_impl(_DIALECT)


class Direct:
    """`statement` compiled once for SQLite; an INSERT names the `column_keys` its parameters carry."""

    def __init__(self, statement: Any, column_keys: Sequence[str] = ()) -> None:
        self.statement = statement
        compiled = statement.compile(dialect=_DIALECT, column_keys=list(column_keys) or None)
        columns = list(statement.exported_columns)
        refused = [c.name for c in columns if _impl(c.type).result_processor(_DIALECT, None)]
        refused += [c.name for c in (*compiled.insert_prefetch, *compiled.update_prefetch)]
        refused += [name for name, bind in compiled.binds.items() if bind.expanding]
        if refused:
            raise ValueError(f"SQLAlchemy must read, compute or expand these itself: {refused}")
        self._sql = str(compiled)
        self._binds: tuple[tuple[str, Callable[[Any], Any] | None], ...] = tuple(
            (name, _impl(compiled.binds[name].type).bind_processor(_DIALECT))
            for name in compiled.positiontup or ()
        )
        self._row: Any = namedtuple("Row", [c.name for c in columns])  # type: ignore[misc]

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        """Every row, each with its columns by name (as SQLAlchemy's rows have them); [] for none."""
        driver = conn.connection.dbapi_connection
        if isinstance(driver, sqlite3.Connection):
            values = [
                params[name] if convert is None else convert(params[name]) for name, convert in self._binds
            ]
            found = driver.execute(self._sql, values).fetchall()
            return [self._row._make(row) for row in found]
        result = conn.execute(self.statement, dict(params))
        return list(result) if result.returns_rows else []

    def first(self, conn: Connection, params: Mapping[str, Any]) -> Any:
        found = self.rows(conn, params)
        return found[0] if found else None
