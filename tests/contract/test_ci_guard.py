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

@pytest.mark.skipif(True, reason="no /proc here")
def test_marked_to_skip():
    pass

def test_needs_a_module():
    pytest.importorskip("no_such_module_for_the_probe")

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
    assert "skipped under CI=true, where every test must run: Skipped: no /proc here" in done.stdout
    assert "no_such_module_for_the_probe" in done.stdout
    # A skip marker acts in the setup phase: there the skip becomes an error.
    assert "2 failed, 1 xfailed, 1 error" in done.stdout


def test_a_skip_is_a_skip_elsewhere(tmp_path: Path) -> None:
    done = _run(tmp_path, "")
    assert done.returncode == 0, done.stdout
    assert "3 skipped, 1 xfailed" in done.stdout
