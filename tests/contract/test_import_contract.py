"""The layering rules of `.importlinter` hold on the tree, and the linter catches a break."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / ".importlinter"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def copy_tree(tmp_path: Path) -> Path:
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "pioneer_grpc", tmp_path / "pioneer_grpc", ignore=skip)
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    result = lint(copy_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "7 kept, 0 broken" in result.stdout
    assert "The edge reaches the store only through the wiring KEPT" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("compiler/text.py", "import grpc", "Cores import no transport"),
        ("history/budget.py", "import sqlalchemy", "Cores import no transport"),
        ("providers/common.py", "from pioneer_grpc.v1 import chat_pb2_grpc", "Cores import no transport"),
        ("manifests/diff.py", "import httpx", "Cores import no transport"),
        ("compiler/text.py", "import opentelemetry.trace", "Cores import no transport"),
        ("history/budget.py", "from pioneer_grpc import telemetry", "Cores import no transport"),
        ("providers/render.py", "import prometheus_client", "Cores import no transport"),
        ("telemetry/tracing.py", "from pioneer_grpc.service import context", "The store and the events"),
        ("service/turn.py", "import grpc", "Use cases never speak gRPC"),
        ("service/history_load.py", "from sqlalchemy import select", "Use cases speak no SQL"),
        ("service/turn.py", "import asyncpg", "Use cases speak no SQL"),
        ("store/threads.py", "from pioneer_grpc.service import context", "The store and the events"),
        ("service/history.py", "from pioneer_grpc.server import app", "Arrows point one way"),
        ("caps/walk.py", "import sqlalchemy", "Cores import no transport"),
        ("client/helpers.py", "from pioneer_grpc.store import clock", "The client ships alone"),
        # The edge: a servicer, an interceptor or the HTTP edge reaching the store itself.
        ("server/servicers/history.py", "from pioneer_grpc.store import failures", "The edge reaches"),
        ("server/interceptors.py", "from pioneer_grpc.store.engine import POOL_WAIT_SECONDS", "The edge"),
        ("server/web/edge.py", "from pioneer_grpc.events import queries", "The edge reaches"),
        ("server/health.py", "import sqlalchemy", "The edge reaches"),
    ],
)
def test_a_forbidden_import_breaks_the_lint(tmp_path: Path, module: str, line: str, contract: str) -> None:
    tree = copy_tree(tmp_path)
    target = tree / "pioneer_grpc" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    result = lint(tree)
    assert result.returncode != 0
    # A contract with ignored imports says so after its verdict: "... BROKEN (8 ignored imports)".
    broken = [row for row in result.stdout.splitlines() if " BROKEN" in row]
    assert any(row.startswith(contract) for row in broken), result.stdout
