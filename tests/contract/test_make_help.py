"""`make help` names every target of the Makefile and the client fragments it includes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKEFILES = ("Makefile", "clients/go/go.mk", "clients/rust/rust.mk")
TARGET = re.compile(r"^([a-z][a-z0-9-]*):(?!=)", re.MULTILINE)


def test_make_help_lists_every_target():
    targets = {name for path in MAKEFILES for name in TARGET.findall((ROOT / path).read_text())}
    assert {"run", "test", "test-python", "go-test", "rust-test", "grpcurl"} <= targets
    shown = subprocess.run(
        ["make", "--no-print-directory", "help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    listed = set(re.findall(r"[a-z][a-z0-9-]*", shown))
    assert sorted(targets - listed) == []
