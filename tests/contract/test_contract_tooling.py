"""The contract's own checks: buf lint (STANDARD), buf breaking against the
committed image, and committed Python stubs identical to a fresh generation."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUF = Path(sys.executable).parent / "buf"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_buf_lint_passes():
    result = run(str(BUF), "lint")
    assert result.returncode == 0, result.stdout + result.stderr


def test_buf_breaking_passes_against_committed_image():
    image = ROOT / "protos" / "contract-image.binpb"
    assert image.exists(), "the committed contract image is missing: run `make contract-image`"
    result = run(str(BUF), "breaking", "--against", str(image))
    assert result.returncode == 0, result.stdout + result.stderr


def test_buf_breaking_catches_a_removed_field(tmp_path):
    """The check can fail: a copy of the contract with a field removed is a break."""
    copy = tmp_path / "protos"
    subprocess.run(["cp", "-r", str(ROOT / "protos"), str(copy)], check=True)
    (tmp_path / "buf.yaml").write_text((ROOT / "buf.yaml").read_text())
    prompt = copy / "pioneer" / "v1" / "prompt.proto"
    prompt.write_text(prompt.read_text().replace("  string boundary_marker = 4;\n", ""))
    result = subprocess.run(
        [str(BUF), "breaking", "--against", str(ROOT / "protos" / "contract-image.binpb")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "boundary_marker" in result.stdout + result.stderr


def test_committed_python_stubs_match_a_fresh_generation(tmp_path):
    result = run(sys.executable, "scripts/gen_python_stubs.py", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    committed = ROOT / "pioneer_grpc" / "v1"
    fresh = sorted(
        p.name for p in tmp_path.iterdir() if p.suffix in (".py", ".pyi") and p.name != "__init__.py"
    )
    stored = sorted(
        p.name for p in committed.iterdir() if p.suffix in (".py", ".pyi") and p.name != "__init__.py"
    )
    assert fresh == stored
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, committed, fresh, shallow=False)
    assert mismatch == [], f"stale stubs: {mismatch}; run `make proto`"
    assert errors == [], f"stale stubs: {mismatch}; run `make proto`"
