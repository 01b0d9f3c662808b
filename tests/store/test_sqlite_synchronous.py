"""Durability is a setting: SQLite's `synchronous` FULL by default, NORMAL when asked, on every connection
of the store (the engine's and the round thread's), from a flag, the environment or the TOML file."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from pioneer_grpc.config import ConfigError, load_config
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.runner import TransactionRunner

# PRAGMA synchronous answers with a number.
NUMBERS = {"NORMAL": 1, "FULL": 2}


@pytest.mark.parametrize("setting", [None, "NORMAL", "FULL"])
async def test_every_connection_of_the_store_has_the_setting(tmp_path, setting):
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    engine = create_engine(url) if setting is None else create_engine(url, setting)
    runner = TransactionRunner(engine)
    try:
        async with engine.connect() as conn:
            on_engine = await conn.scalar(text("PRAGMA synchronous"))
        in_round = await runner.read(lambda conn: conn.execute(text("PRAGMA synchronous")).scalar_one())
    finally:
        await runner.close()
        await engine.dispose()
    assert on_engine == in_round == NUMBERS[setting or "FULL"]


def test_the_setting_from_each_layer(tmp_path):
    assert load_config({}, {}).sqlite_synchronous == "FULL"
    toml = tmp_path / "c.toml"
    toml.write_text('sqlite_synchronous = "normal"\n')
    assert load_config({}, {}, toml).sqlite_synchronous == "NORMAL"
    assert load_config({}, {"PIONEER_SQLITE_SYNCHRONOUS": "FULL"}, toml).sqlite_synchronous == "FULL"
    assert load_config({"sqlite_synchronous": "NORMAL"}, {}).sqlite_synchronous == "NORMAL"
    with pytest.raises(ConfigError, match="PIONEER_SQLITE_SYNCHRONOUS") as err:
        load_config({}, {"PIONEER_SQLITE_SYNCHRONOUS": "OFF"})
    assert "FULL, NORMAL" in str(err.value)
