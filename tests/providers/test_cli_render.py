"""`pioneer-grpc render`: a ChatRequest JSON file in, the exact body out."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest
from google.protobuf import json_format

from pioneer_grpc.cli import render as cli_render
from pioneer_grpc.providers import render
from tests.providers.cases import PROVIDERS, build


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pioneer-grpc")
    cli_render.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


@pytest.mark.parametrize("provider_name", list(PROVIDERS))
def test_prints_the_exact_body(
    provider_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = build("tool_round_trip", PROVIDERS[provider_name])
    path = tmp_path / "request.json"
    path.write_text(json_format.MessageToJson(request), encoding="utf-8")
    assert run(["render", "--provider", provider_name, str(path)]) == 0
    out, err = capsys.readouterr()
    rendered = render(PROVIDERS[provider_name], request)
    assert out == rendered.body_json + "\n"
    assert rendered.path in err


def test_pretty_and_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "request.json"
    path.write_text(json_format.MessageToJson(build("plain_compiled", PROVIDERS["openai-chat"])))
    assert (
        run(["render", "--provider", "openai-chat", str(path), "--pretty", "--cache-key-prefix", "t-"]) == 0
    )
    out, _ = capsys.readouterr()
    assert out.startswith("{\n  ")
    assert json.loads(out)["prompt_cache_key"].startswith("t-")


def test_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    request = build("plain", PROVIDERS["anthropic"])
    monkeypatch.setattr("sys.stdin", io.StringIO(json_format.MessageToJson(request)))
    assert run(["render", "--provider", "anthropic", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == request.model


def test_violations_are_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "request.json"
    path.write_text(
        json.dumps(
            {
                "model": "m",
                "messages": [{"role": "CHAT_ROLE_USER", "content": "hi"}],
                "tools": [{"name": "bad name"}],
            }
        )
    )
    assert run(["render", "--provider", "gemini", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "chat_request.tools[0].name" in err


def test_bad_json_and_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "request.json"
    path.write_text('{"modle": "m"}')
    assert run(["render", "--provider", "gemini", str(path)]) == 2
    assert "ChatRequest" in capsys.readouterr().err
    assert run(["render", "--provider", "gemini", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
