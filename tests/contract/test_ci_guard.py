"""Under CI=true a skipped test fails, naming why it skipped; elsewhere it stays a skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import pytest

def test_needs_something():
    pytest.skip("this machine lacks something")

@pytest.mark.xfail(reason="known")
def test_known_failure():
    raise AssertionError
"""


def _run(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text("from tests.ci_guard import pytest_runtest_makereport  # noqa\n")
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_skip_fails_under_ci(tmp_path: Path) -> None:
    done = _run(tmp_path, "true")
    assert done.returncode == 1, done.stdout
    assert "skipped under CI=true, where every test must run: Skipped: this machine lacks something" in (
        done.stdout
    )
    assert "1 failed, 1 xfailed" in done.stdout


def test_a_skip_is_a_skip_elsewhere(tmp_path: Path) -> None:
    done = _run(tmp_path, "")
    assert done.returncode == 0, done.stdout
    assert "1 skipped, 1 xfailed" in done.stdout
