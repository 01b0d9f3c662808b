"""Every command README.md and docs/walkthrough.md show runs as written against a live server.

The shell blocks run from the repository root with .venv/bin and .tools/bin on PATH
(as the README's `export PATH=...` line sets them); the documented address
127.0.0.1:50051 is replaced by the test server's, and HOME by a fresh folder so the
offline CLI's default home (~/.pioneer) is the test's own. grpcurl comes from
`make grpcurl` (`make test` runs it).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from tests.support import unavailable_here

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED_ADDRESS = "127.0.0.1:50051"
BLOCK = re.compile(r"^```(sh|python)\n(.*?)^```", re.MULTILINE | re.DOTALL)
# Blocks that are not calls: the make targets themselves, the supervisor.
NOT_RUN = ("make run", "--workers")
# The watch streams until it is stopped: it runs until it printed the thread's first event.
STREAMING = "WatchManifests"


def blocks(path: Path) -> list[tuple[str, str]]:
    return [
        (kind, text) for kind, text in BLOCK.findall(path.read_text()) if not any(n in text for n in NOT_RUN)
    ]


async def _run(command: list[str], env: dict[str, str], until: str | None = None) -> tuple[int | None, str]:
    process = await asyncio.create_subprocess_exec(
        *command, cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    assert process.stdout is not None
    if until is None:
        out, _ = await asyncio.wait_for(process.communicate(), 120)
        return process.returncode, out.decode()
    seen = b""
    try:
        while until.encode() not in seen:
            chunk = await asyncio.wait_for(process.stdout.read(4096), 60)
            assert chunk, seen.decode()
            seen += chunk
    finally:
        process.kill()
        await process.wait()
    return 0, seen.decode()


def _environment(tmp_path: Path) -> dict[str, str]:
    grpcurl = ROOT / ".tools" / "bin" / "grpcurl"
    if not grpcurl.exists():
        unavailable_here(f"{grpcurl} missing: `make grpcurl` installs it")
    home = tmp_path / "home"
    home.mkdir()
    path = f"{ROOT / '.venv' / 'bin'}:{ROOT / '.tools' / 'bin'}:{os.environ['PATH']}"
    return {**os.environ, "HOME": str(home), "PATH": path}


async def test_the_readme_commands_run_as_written(server, tmp_path):
    env = _environment(tmp_path)
    found = blocks(ROOT / "README.md")
    assert [kind for kind, _ in found].count("python") == 1
    assert sum("grpcurl" in text for _, text in found) >= 2
    for kind, text in found:
        text = text.replace(DOCUMENTED_ADDRESS, server.address)
        if kind == "python":
            code, out = await _run([sys.executable, "-c", text], env)
        else:
            code, out = await _run(["bash", "-e", "-o", "pipefail", "-c", text], env)
        assert code == 0, f"{text}\n---\n{out}"
        if "GetThread" in text:
            assert '"reason": "THREAD_NOT_FOUND"' in out, out
        elif "ERROR" in out:
            pytest.fail(f"{text}\n---\n{out}")


async def test_the_walkthrough_runs_as_written(server, tmp_path):
    env = _environment(tmp_path)
    [(_, definitions), *steps] = blocks(ROOT / "docs" / "walkthrough.md")
    assert "G=" in definitions
    assert len(steps) >= 8
    definitions = definitions.replace(DOCUMENTED_ADDRESS, server.address)
    for _, text in steps:
        until = '"eventId"' if STREAMING in text else None
        code, out = await _run(["bash", "-e", "-o", "pipefail", "-c", f"{definitions}\n{text}"], env, until)
        assert code == 0, f"{text}\n---\n{out}"
        assert "ERROR" not in out, f"{text}\n---\n{out}"
