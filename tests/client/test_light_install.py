"""The client wheel installs into a fresh venv without the server's dependencies and talks to a server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import importlib.util, sys
from pioneer_grpc.client import Client, ThreadConfig, ThreadNotFound, reasons
for heavy in ("sqlalchemy", "asyncpg", "aiosqlite", "alembic", "httpx", "tiktoken"):
    assert importlib.util.find_spec(heavy) is None, heavy
with Client.connect(sys.argv[1]) as client:
    client.create_thread(thread_id="light", config=ThreadConfig(model="m"))
    assert client.get_thread(thread_id="light").thread.config.model == "m"
    try:
        client.get_thread(thread_id="missing")
    except ThreadNotFound as exc:
        assert exc.reason == reasons.THREAD_NOT_FOUND
        print("ok", exc.reason)
"""


def _install(tmp_path: Path) -> Path:
    wheel = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_python_client.py"), str(tmp_path / "dist")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel],
        check=True,
        timeout=600,
        env={**os.environ, "PIP_NO_INPUT": "1"},
    )
    return python


async def test_the_client_wheel_installs_light_and_works(tmp_path, server):
    python = await asyncio.to_thread(_install, tmp_path)
    listed = await asyncio.to_thread(
        subprocess.run, [str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    )
    names = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert "pioneer-grpc-client" in names
    assert not names & {"sqlalchemy", "asyncpg", "aiosqlite", "alembic", "httpx", "pioneer-grpc"}
    process = await asyncio.create_subprocess_exec(
        str(python),
        "-c",
        SCRIPT,
        server.address,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=tmp_path,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    assert out.decode().strip() == "ok THREAD_NOT_FOUND"
