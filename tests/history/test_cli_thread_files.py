"""`pioneer-grpc threads export|import` against a running server: a file that is whole or absent."""

from __future__ import annotations

import asyncio
import json

from pioneer_grpc.cli import main
from pioneer_grpc.client import user_entry


async def test_export_writes_a_whole_file_that_import_stores_under_another_id(
    server_factory, tmp_path, capsys
):
    server = await server_factory(token="s3cret")
    client = await server.client()
    await client.create_thread(thread_id="t")
    await client.complete_turn(thread_id="t", turn_id="u1", entries=[user_entry("q1", "hello", turn_id="u1")])
    out = tmp_path / "t.jsonl"
    flags = ["--addr", server.address, "--token", "s3cret"]
    assert await asyncio.to_thread(main, ["threads", "export", "t", "-o", str(out), *flags]) == 0
    lines = out.read_bytes().splitlines()
    assert json.loads(lines[0])["thread_id"] == "t" and json.loads(lines[-1])["entries"] == 1
    assert await asyncio.to_thread(main, ["threads", "import", str(out), "--thread-id", "copy", *flags]) == 0
    assert "copy: imported 1 entries, 1 turns, 0 summaries" in capsys.readouterr().out
    assert (await client.get_thread(thread_id="copy")).thread.entry_count == 1
    # The same import again: the id is taken, status 1, a line saying why.
    assert await asyncio.to_thread(main, ["threads", "import", str(out), "--thread-id", "copy", *flags]) == 1
    assert "ALREADY_EXISTS: thread 'copy' already exists" in capsys.readouterr().err
    # A thread that does not exist: status 1, and no file, not even a part of one.
    missing = tmp_path / "missing.jsonl"
    assert await asyncio.to_thread(main, ["threads", "export", "nobody", "-o", str(missing), *flags]) == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("missing")) == []
