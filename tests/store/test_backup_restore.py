"""docs/deploying.md's backup and restore, run as written on SQLite and PostgreSQL.

A server holds a thread of whole turns and a round's manifest. The page's backup commands copy the
database while that server runs (on SQLite its newest commits are still in the WAL), and a round
written after is not in the copy; its restore commands put the copy into a fresh database; a server
started on it answers the same thread, entries and manifest, and takes new rounds after them (event
ids go on). Each block's first line sets the page's example paths: the
test sets its own instead, runs the rest, and leaves out what needs a real service (systemctl, chown).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg

from pioneer_grpc.v1 import history_pb2, prompt_pb2
from tests.builders import ASSISTANT, USER, entry
from tests.support import unavailable_here

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "deploying.md").read_text()
SKIPPED = ("systemctl ", "chown ")


def _blocks(backend: str) -> tuple[list[str], list[str]]:
    """The backup and restore commands of the page's section for `backend`, without their first line."""
    section = PAGE[PAGE.index("## Backup and restore") :]
    section = section[section.index(f"### {backend}") :]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)[:2]
    backup, restore = (
        [line for line in b.splitlines()[1:] if line and not line.startswith(SKIPPED)] for b in blocks
    )
    return backup, restore


def _run(lines: list[str], env: dict[str, str]) -> None:
    script = "\n".join(line.replace("/opt/pioneer-grpc/.venv/bin/python", sys.executable) for line in lines)
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], env={**os.environ, **env}, capture_output=True, text=True
    )
    assert result.returncode == 0, f"{script}\n{result.stdout}{result.stderr}"


async def _write(server: object, turns: int, first: int = 0) -> None:
    client = await server.client()  # type: ignore[attr-defined]
    for i in range(first, first + turns):
        await client.complete_turn(
            thread_id="t",
            turn_id=f"turn-{i}",
            entries=[
                entry(f"u{i}", f"turn-{i}", USER, f"question {i}"),
                entry(f"a{i}", f"turn-{i}", ASSISTANT),
            ],
        )
    await client.prepare_turn(
        thread_id="t",
        turn_id=f"turn-{first + turns}",
        new_entries=[entry(f"u{first + turns}", f"turn-{first + turns}", USER, "and now?")],
        compile_input=prompt_pb2.PromptCompileInput(dynamic_context=f"round {first + turns}"),
    )


async def _state(server: object) -> tuple[bytes, list[bytes], bytes, int]:
    """(the thread, its entries, the last round's manifest, its event id), as the server answers them."""
    client = await server.client()  # type: ignore[attr-defined]
    thread = (await client.get_thread(thread_id="t")).thread
    entries = [
        e.SerializeToString(deterministic=True)
        for e in (await client.list_entries(thread_id="t", page_size=100)).entries
    ]
    turns = (await client.list_turns(thread_id="t", page_size=100)).turns
    last = max(turns, key=lambda turn: turn.create_time.ToNanoseconds()).turn_id
    manifest = await client.get_turn_manifest(thread_id="t", turn_id=last)
    return (
        thread.SerializeToString(deterministic=True),
        entries,
        manifest.manifest.SerializeToString(deterministic=True),
        manifest.event_id,
    )


async def test_a_backup_taken_while_serving_restores_whole(database_url, server_factory, tmp_path):
    server = await server_factory(database_url=database_url)
    await (await server.client()).create_thread(
        thread_id="t", config=history_pb2.ThreadConfig(model="gpt-4o")
    )
    await _write(server, 3)
    before = await _state(server)
    sqlite = database_url.startswith("sqlite")
    backup_lines, restore_lines = _blocks("SQLite" if sqlite else "PostgreSQL")
    if sqlite:
        db, backup = database_url.split(":///", 1)[1], str(tmp_path / "backup.db")
        _run(backup_lines, {"DB": db, "BACKUP": backup})
        restored_db = tmp_path / "restored" / "pioneer.db"
        restored_db.parent.mkdir()
        _run(restore_lines, {"DB": str(restored_db), "BACKUP": backup})
        restored_url = f"sqlite+aiosqlite:///{restored_db}"
    else:
        for tool in ("pg_dump", "pg_restore", "createdb"):
            if shutil.which(tool) is None:
                unavailable_here(f"{tool} is not installed (Debian's postgresql-client)")
        source = database_url.replace("postgresql+asyncpg", "postgresql")
        backup = str(tmp_path / "backup.dump")
        _run(backup_lines, {"SOURCE": source, "BACKUP": backup})
        target = f"{source.rsplit('/', 1)[0]}/r_{uuid.uuid4().hex[:12]}"
        _run(restore_lines, {"TARGET": target, "BACKUP": backup})
        restored_url = target.replace("postgresql", "postgresql+asyncpg", 1)
    # Written after the backup: not in the restored copy.
    await _write(server, 1, first=10)
    try:
        restored = await server_factory(database_url=restored_url)
        assert await _state(restored) == before
        await _write(restored, 1, first=20)  # new rounds go on after the restored ones
        after = await _state(restored)
        assert after[3] > before[3]
        assert len(after[1]) == len(before[1]) + 3
    finally:
        if not sqlite:
            conn = await asyncpg.connect(source.rsplit("/", 1)[0] + "/postgres")
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{target.rsplit("/", 1)[1]}" WITH (FORCE)')
            finally:
                await conn.close()
