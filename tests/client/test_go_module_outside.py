"""The Go client as its README says to depend on it, from a module of one's own outside this repository.

A fresh module runs the commands of clients/go/README.md's "Depending on it" block (the checkout path
replaced by this one), then builds the README's example and a copy of cmd/agentloop there: neither may
need anything a module outside this one cannot import (an internal package, a version nobody
published).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from tests.support import unavailable_here

ROOT = Path(__file__).resolve().parents[2]
GO_DIR = ROOT / "clients" / "go"
README = GO_DIR / "README.md"
CHECKOUT = "../pioneer-grpc/clients/go"


def _go() -> str:
    found = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if found is None:
        unavailable_here("no Go toolchain on this machine")
    return found


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end > 0 else len(text)]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def _run(args: list[str], cwd: Path, go: str) -> None:
    env = dict(os.environ, GOFLAGS="-mod=mod", GOWORK="off")
    env["PATH"] = f"{Path(go).parent}:{env.get('PATH', '')}"
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{' '.join(args)} in {cwd}:\n{result.stdout}{result.stderr}"


def test_a_module_of_ones_own_depends_on_the_client_as_the_readme_says_and_builds_the_examples(
    tmp_path: Path,
) -> None:
    go = _go()
    text = README.read_text()
    commands = _blocks(_section(text, "## Depending on it"), "sh")
    assert len(commands) == 1, "the section has one block of commands"
    lines = [line for line in commands[0].splitlines() if line.strip() and not line.startswith("#")]
    assert lines, commands
    mine = tmp_path / "mine"
    mine.mkdir()
    _run([go, "mod", "init", "example.com/mine"], mine, go)
    for line in lines:
        assert CHECKOUT in line or "replace" not in line, line
        _run(shlex.split(line.replace(CHECKOUT, str(GO_DIR))), mine, go)

    example = _blocks(_section(text, "## One provider round"), "go")[0]
    (mine / "round").mkdir()
    (mine / "round" / "main.go").write_text(example)
    (mine / "agentloop").mkdir()
    shutil.copy(GO_DIR / "cmd" / "agentloop" / "main.go", mine / "agentloop" / "main.go")
    _run([go, "mod", "tidy"], mine, go)
    _run([go, "build", "-o", str(tmp_path / "bin") + "/", "./round", "./agentloop"], mine, go)
    assert (tmp_path / "bin" / "round").exists()
    assert (tmp_path / "bin" / "agentloop").exists()
