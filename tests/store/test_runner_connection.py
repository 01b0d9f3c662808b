"""The SQLite round thread's own connection: kept between transactions; a failure leaves nothing behind."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.runner import TransactionRunner


def _driver_connection_id(conn) -> int:
    return id(conn.connection.dbapi_connection)


async def test_one_connection_between_transactions_and_a_failed_one_rolled_back(tmp_path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    runner = TransactionRunner(engine)
    seen = []

    def work(conn):
        conn.execute(text("CREATE TABLE IF NOT EXISTS t (x INTEGER)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
        seen.append(_driver_connection_id(conn))
        return conn.execute(text("SELECT count(*) FROM t")).scalar_one()

    def failing(conn):
        conn.execute(text("INSERT INTO t VALUES (2)"))
        seen.append(_driver_connection_id(conn))
        raise KeyError("rolled back")

    assert (await runner.transact(work))[0] == 1
    assert (await runner.transact(work))[0] == 2
    with pytest.raises(KeyError):
        await runner.transact(failing)
    assert (await runner.transact(work))[0] == 3  # the failed insert was rolled back
    assert seen[0] == seen[1] == seen[2], "a transaction took another connection"
    assert await runner.read(lambda conn: conn.execute(text("SELECT count(*) FROM t")).scalar_one()) == 3
    await runner.close()
    await runner.close()  # a server stopped twice closes its runner twice
    await engine.dispose()
