"""A statement every round or load makes, run on SQLite's own driver connection.

For a statement of one or a few rows, SQLAlchemy's execution (cache key, context,
result wrapping) costs several times SQLite's own work. `Direct` compiles a built
statement once for SQLite and, on a plain sqlite3 connection (the store's own
thread, store/runner.py), hands it to the driver; on any other connection
(PostgreSQL, aiosqlite) it executes the statement as usual. Only statements whose
parameters and columns need no conversion qualify (integers and text), so both
ways read and write the same values: this is checked when one is built.
"""

from __future__ import annotations

import sqlite3
from collections import namedtuple
from collections.abc import Mapping
from typing import Any

from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

_DIALECT = sqlite.dialect()


def _impl(type_: Any) -> Any:
    return type_.dialect_impl(_DIALECT)


class Direct:
    def __init__(self, statement: Any) -> None:
        self.statement = statement
        compiled = statement.compile(dialect=_DIALECT)
        columns = list(statement.exported_columns)
        converted = [
            name for name, bind in compiled.binds.items() if _impl(bind.type).bind_processor(_DIALECT)
        ]
        converted += [c.name for c in columns if _impl(c.type).result_processor(_DIALECT, None)]
        if converted:
            raise ValueError(f"values that SQLAlchemy converts cannot go to the driver directly: {converted}")
        self._sql = str(compiled)
        self._order = tuple(compiled.positiontup or ())
        self._row: Any = namedtuple("Row", [c.name for c in columns])  # type: ignore[misc]

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        """Every row, each with its columns by name (as SQLAlchemy's rows have them)."""
        driver = conn.connection.dbapi_connection
        if isinstance(driver, sqlite3.Connection):
            found = driver.execute(self._sql, [params[name] for name in self._order]).fetchall()
            return [self._row._make(row) for row in found]
        return list(conn.execute(self.statement, dict(params)))

    def first(self, conn: Connection, params: Mapping[str, Any]) -> Any:
        found = self.rows(conn, params)
        return found[0] if found else None
