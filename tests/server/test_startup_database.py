"""A database the server cannot reach stops the start with a line that says it is the database."""

from __future__ import annotations

import pytest

from pioneer_grpc.config import Config
from pioneer_grpc.server.app import StartupError, start_server
from tests.support import free_port


async def test_an_unreachable_postgresql_is_named_as_the_database(tmp_path):
    port = free_port()  # nothing listens there
    url = f"postgresql+asyncpg://pioneer:secret@127.0.0.1:{port}/pioneer"
    config = Config(home=tmp_path, database_url=url, listen="127.0.0.1:0")
    with pytest.raises(StartupError) as failed:
        await start_server(config)
    assert str(failed.value) == (
        f"cannot reach the database postgresql+asyncpg://pioneer:***@127.0.0.1:{port}/pioneer: "
        "Connection refused"
    )


def test_workers_name_an_unreachable_postgresql_as_the_database(tmp_path, capsys):
    from pioneer_grpc import cli
    from pioneer_grpc.cli import exits

    port = free_port()  # nothing listens there
    url = f"postgresql+asyncpg://pioneer:secret@127.0.0.1:{port}/pioneer"
    args = ["serve", "--home", str(tmp_path), "--workers", "2", "--database-url", url]
    args += ["--listen", "127.0.0.1:0"]
    assert cli.main(args) == exits.FAILURE
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"pioneer-grpc serve: cannot start: cannot reach the database "
        f"postgresql+asyncpg://pioneer:***@127.0.0.1:{port}/pioneer: Connection refused"
    )
