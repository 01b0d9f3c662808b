"""`pioneer-grpc compile` with the server's persona settings and a request's own persona."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pioneer_grpc.cli import compile as cli_compile
from pioneer_grpc.compiler.render import policies

from .inputs import write_home

SCOUT = "You are Scout, a browser agent that files expense reports."
SETTINGS = ("PERSONA", "PERSONA_FILE", "HOME_LABEL", "EXTRA_HOME_LABELS", "CONFIG", "HOME", "EXTRA_HOMES")


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="pioneer-grpc")
    cli_compile.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    result: int = args.func(args)
    return result


@pytest.fixture(autouse=True)
def no_server_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(f"PIONEER_{name}", raising=False)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "input.json"
    path.write_text(json.dumps({"profile": "PROMPT_PROFILE_MINIMAL"}), encoding="utf-8")
    return path


def printed(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().out


def test_default_is_the_seed_text(home: Path, source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_home(home)
    assert run("compile", str(source), "--home", str(home)) == 0
    out = printed(capsys)
    assert out.startswith(f"## Identity\n{policies.IDENTITY_BASE}\n\n## Safety\n")
    assert "### SOUL.md (~/.pioneer/SOUL.md)" in out
    assert str(home) not in out


def test_persona_file_and_home_label_flags(
    home: Path, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_home(home)
    persona = tmp_path / "persona.md"
    persona.write_text(SCOUT, encoding="utf-8")
    argv = (
        "compile",
        str(source),
        "--home",
        str(home),
        "--persona-file",
        str(persona),
        "--home-label",
        "/srv",
    )
    assert run(*argv) == 0
    out = printed(capsys)
    assert out.startswith(f"## Identity\n{SCOUT}\n\n## Safety\n")
    # A persona is the team's identity: SOUL.md and IDENTITY.md are not read unless asked for.
    assert "SOUL.md" not in out and "IDENTITY.md" not in out
    assert "### USER.md (/srv/USER.md)" in out
    assert run(*argv, "--identity-files", "read") == 0
    assert "### SOUL.md (/srv/SOUL.md)" in printed(capsys)
    assert run("compile", str(source), "--home", str(home), "--persona", "") == 0
    assert printed(capsys).startswith("## Safety\n")


def test_persona_from_the_config_file_and_the_environment(
    home: Path,
    source: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    toml = tmp_path / "pioneer.toml"
    toml.write_text(f'persona = "{SCOUT}"\n', encoding="utf-8")
    assert run("compile", str(source), "--home", str(home), "--config", str(toml)) == 0
    assert printed(capsys).startswith(f"## Identity\n{SCOUT}\n")
    monkeypatch.setenv("PIONEER_PERSONA", "You are Ledger.")
    assert run("compile", str(source), "--home", str(home)) == 0
    assert printed(capsys).startswith("## Identity\nYou are Ledger.\n")


def test_the_inputs_persona_fields(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIONEER_PERSONA", SCOUT)
    own = tmp_path / "own.json"
    own.write_text(
        json.dumps({"profile": "PROMPT_PROFILE_NONE", "persona": "You are Ledger."}), encoding="utf-8"
    )
    assert run("compile", str(own), "--home", str(home)) == 0
    assert printed(capsys) == "## Identity\nYou are Ledger.\n"
    omitted = tmp_path / "omitted.json"
    omitted.write_text(json.dumps({"profile": "PROMPT_PROFILE_NONE", "omitPersona": True}), encoding="utf-8")
    assert run("compile", str(omitted), "--home", str(home)) == 0
    assert printed(capsys) == "\n"


def test_bad_persona_input_and_settings_exit_2(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"persona": SCOUT, "omitPersona": True}), encoding="utf-8")
    assert run("compile", str(both), "--home", str(home)) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "pioneer-grpc compile: input.omit_persona: cannot be set together with persona"
    )
    missing = tmp_path / "missing.md"
    assert run("compile", str(both), "--home", str(home), "--persona-file", str(missing)) == 2
    assert f"persona file {missing}: No such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run("compile", str(both), "--persona", "x", "--persona-file", str(missing))
