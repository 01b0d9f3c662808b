"""`pioneer-grpc compile INPUT.json`: the core run locally from a JSON input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from google.protobuf import json_format

from pioneer_grpc.cli import compile as cli_compile
from pioneer_grpc.compiler import compile_prompt
from pioneer_grpc.v1 import prompt_pb2

from .inputs import full_profile_input, write_home


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="pioneer-grpc")
    cli_compile.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    result: int = args.func(args)
    return result


@pytest.fixture(autouse=True)
def no_server_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PIONEER_CONFIG", "PIONEER_HOME", "PIONEER_EXTRA_HOMES"):
        monkeypatch.delenv(name, raising=False)


def write_input(path: Path, request: prompt_pb2.PromptCompileInput) -> Path:
    path.write_text(json_format.MessageToJson(request), encoding="utf-8")
    return path


def test_prints_the_prompt_with_a_visible_boundary(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_home(home)
    request = full_profile_input()
    source = write_input(tmp_path / "input.json", request)
    assert run("compile", str(source), "--home", str(home)) == 0
    out = capsys.readouterr().out
    expected = compile_prompt(request, [home])
    assert out == f"{expected.stable_system_text}\n──── cache boundary ────\n{expected.dynamic_system_text}\n"
    assert "<!-- PIONEER_PROMT_CACHE_BOUNDARY -->" not in out


def test_json_prints_the_whole_payload(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "input.json"
    source.write_text(
        json.dumps({"dynamicContext": "ctx", "profile": "PROMPT_PROFILE_FULL"}), encoding="utf-8"
    )
    assert run("compile", str(source), "--home", str(home), "--json") == 0
    printed = json_format.Parse(capsys.readouterr().out, prompt_pb2.CompiledPromptPayload())
    expected = compile_prompt(prompt_pb2.PromptCompileInput(dynamic_context="ctx"), [home])
    assert printed == expected


def test_diagnostics_go_to_stderr(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_input(tmp_path / "input.json", prompt_pb2.PromptCompileInput())
    assert run("compile", str(source), "--home", str(home)) == 0
    err = capsys.readouterr().err
    # Each diagnostic line, then (indented) what the missing file is for.
    assert [line for line in err.splitlines() if not line.startswith("  ")] == [
        "diagnostic missing_file: bootstrap file `SOUL.md` is missing",
        "diagnostic missing_file: bootstrap file `IDENTITY.md` is missing",
        "note: USER.md is optional: what the assistant should know about you (name, role, "
        "preferences), added to the prompt as the User Persona section. Nothing writes it; "
        f"create {home}/USER.md to use it.",
    ]
    assert len(err.splitlines()) == 5


def test_bad_input_names_each_field_and_exits_2(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "input.json"
    source.write_text(json.dumps({"profile": 7, "dynamicSections": [{"id": "a b"}]}), encoding="utf-8")
    assert run("compile", str(source), "--home", str(home)) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[1] == "pioneer-grpc compile: input.dynamic_sections[0].id: must not contain whitespace"
    assert err[0].startswith("pioneer-grpc compile: input.profile: unknown value 7;")


def test_unreadable_json_and_escapes_exit_2(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    assert run("compile", str(broken), "--home", str(home)) == 2
    escape = write_input(tmp_path / "escape.json", prompt_pb2.PromptCompileInput(workspace_root="/etc"))
    assert run("compile", str(escape), "--home", str(home)) == 2
    assert "input.workspace_root: '/etc' resolves to /etc" in capsys.readouterr().err
