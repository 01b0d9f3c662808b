"""The client wheel builds from a fresh venv's Python, installs there without the server's dependencies,
talks to a server, and carries its types (py.typed) to a type checker."""

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


TYPED = """
from pioneer_grpc.client import AsyncClient, Client


def use(client: Client) -> None:
    reveal_type(client.get_thread(thread_id="t"))
    reveal_type(client.watch_manifests(thread_id="t"))


async def use_async(client: AsyncClient) -> None:
    reveal_type(await client.prepare_turn(thread_id="t"))
    reveal_type(client.watch_manifests(thread_id="t"))
"""


def _install(tmp_path: Path) -> Path:
    # A fresh venv has only the pip and setuptools its Python bundles (no `wheel`): the
    # README's command builds from there, outside the project's venv.
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    built = subprocess.run(
        [str(python), str(ROOT / "scripts" / "build_python_client.py"), str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert built.returncode == 0, built.stderr
    wheel = built.stdout.strip()
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

    # mypy, pointed at the fresh venv, reads the installed wheel's types (PEP 561).
    (tmp_path / "typed.py").write_text(TYPED)
    checked = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-executable",
            str(python),
            "typed.py",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    revealed = [
        line.split("Revealed type is ")[1] for line in checked.stdout.splitlines() if "Revealed" in line
    ]
    assert revealed == [
        '"pioneer_grpc.v1.history_service_pb2.GetThreadResponse"',
        '"typing.Iterator[pioneer_grpc.v1.manifest_service_pb2.WatchManifestsResponse]"',
        '"pioneer_grpc.v1.turn_service_pb2.PrepareTurnResponse"',
        '"typing.AsyncIterator[pioneer_grpc.v1.manifest_service_pb2.WatchManifestsResponse]"',
    ], checked.stdout
