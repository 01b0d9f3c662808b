"""scripts/test_all.sh (`make test`) runs every suite even when one before it failed, and fails at the end
naming each failed one.

The script runs for real in a copy of the repository's layout whose tools are stand-ins that record
their calls: lint fails first and the Python tests fail later; the Go and Rust contract tests and the
example loop must still run.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/usr/bin/env bash\necho "$(basename "$0") $*" >> "$CALLS"\n{body}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _layout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("test_all.sh", "free_port.py"):
        shutil.copy(ROOT / "scripts" / name, repo / "scripts" / name)
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(sys.executable)
    _tool(repo / ".venv" / "bin" / "pytest", "exit 1")
    _tool(repo / "scripts" / "pg.sh", 'if [ "$1" = start ]; then echo postgresql+asyncpg://x@h:1/x; fi')
    _tool(repo / "scripts" / "chromium.sh", "echo /usr/bin/true")
    _tool(repo / "scripts" / "ts_client.sh", "exit 0")
    _tool(repo / "scripts" / "with_server.sh", "exit 0")
    tools = tmp_path / "bin"
    _tool(tools / "make", 'case " $* " in *" lint "*) exit 2;; esac; exit 0')
    _tool(tools / "go", "exit 0")
    _tool(tools / "cargo", "exit 0")
    return repo


def test_every_suite_runs_and_the_end_names_each_failed_one(tmp_path: Path) -> None:
    repo = _layout(tmp_path)
    calls = tmp_path / "calls"
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "CALLS": str(calls), "HOME": str(tmp_path)}
    result = subprocess.run(
        ["bash", "scripts/test_all.sh"], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    ran = calls.read_text().splitlines()
    # Past the failed lint: the stubs check, the Python tests, the contract tests and the example loop.
    assert "make --no-print-directory proto-check" in ran, ran
    assert any(line.startswith("pytest ") for line in ran), ran
    assert "make --no-print-directory test-contract" in ran, ran
    assert any(line.startswith("with_server.sh ") for line in ran), ran
    summary = out[out.index("make test FAILED") :]
    assert "lint: ruff, mypy" in summary
    assert "Python tests" in summary
    assert "contract tests" not in summary
    assert "generated stubs" not in summary


def test_a_clean_run_passes(tmp_path: Path) -> None:
    repo = _layout(tmp_path)
    _tool(tmp_path / "bin" / "make", "exit 0")
    _tool(repo / ".venv" / "bin" / "pytest", "exit 0")
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "CALLS": str(tmp_path / "c"), "HOME": str(tmp_path)}
    result = subprocess.run(
        ["bash", "scripts/test_all.sh"], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "make test passed" in result.stdout
