"""One exit status and one stderr format per kind of mistake, across `pioneer-grpc` subcommands.

0 ok, 1 the server or runtime failed, 2 what the command was given is wrong
(pioneer_grpc/cli/exits.py); every line is `pioneer-grpc <cmd>: <what>`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pioneer_grpc.cli import exits, main
from tests.support import free_port

# The arguments each file-reading subcommand takes around its input path.
FILE_COMMANDS = {
    "compile": lambda path, home: ["compile", path, "--home", home],
    "render": lambda path, home: ["render", "--provider", "anthropic", path],
}
MESSAGE_KINDS = {"compile": "PromptCompileInput", "render": "ChatRequest"}
# Longer than any id may be: the server names thread_id in a field violation.
TOO_LONG_ID = "x" * 5_000


@pytest.fixture(autouse=True)
def no_server_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PIONEER_CONFIG", "PIONEER_HOME", "PIONEER_EXTRA_HOMES", "PIONEER_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def err_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("command", list(FILE_COMMANDS))
def test_a_missing_input_file_is_a_usage_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.json"
    assert main(FILE_COMMANDS[command](str(missing), str(tmp_path))) == exits.USAGE
    assert err_lines(capsys) == [f"pioneer-grpc {command}: cannot read {missing}: No such file or directory"]


@pytest.mark.parametrize("command", list(FILE_COMMANDS))
def test_an_unreadable_input_is_a_usage_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(FILE_COMMANDS[command](str(tmp_path), str(tmp_path))) == exits.USAGE  # a directory
    [line] = err_lines(capsys)
    assert line.startswith(f"pioneer-grpc {command}: cannot read {tmp_path}: ")


@pytest.mark.parametrize("command", list(FILE_COMMANDS))
def test_malformed_json_is_a_usage_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    assert main(FILE_COMMANDS[command](str(broken), str(tmp_path))) == exits.USAGE
    [line] = err_lines(capsys)
    assert line.startswith(
        f"pioneer-grpc {command}: {broken} is not a {MESSAGE_KINDS[command]} in protobuf JSON: "
    )


def test_render_lists_each_violation_once_one_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "request.json"
    path.write_text(
        json.dumps(
            {
                "model": "m",
                "messages": [{"role": "CHAT_ROLE_USER", "content": "hi"}],
                "tools": [{"name": "bad name"}, {"name": "also bad"}],
            }
        ),
        encoding="utf-8",
    )
    assert main(["render", "--provider", "gemini", str(path)]) == exits.USAGE
    lines = err_lines(capsys)
    assert [line.split(": ")[1] for line in lines] == [
        "chat_request.tools[0].name",
        "chat_request.tools[1].name",
    ]
    assert all(line.startswith("pioneer-grpc render: chat_request.tools[") for line in lines)


async def test_history_lists_the_servers_violations_as_a_usage_error(
    server, capsys: pytest.CaptureFixture[str]
) -> None:
    status = await asyncio.to_thread(main, ["history", TOO_LONG_ID, "--addr", server.address])
    assert status == exits.USAGE
    lines = err_lines(capsys)
    assert lines
    assert all(line.startswith("pioneer-grpc history: thread_id: ") for line in lines)


async def test_watch_lists_the_servers_violations_as_a_usage_error(
    server, capsys: pytest.CaptureFixture[str]
) -> None:
    status = await asyncio.to_thread(main, ["watch", "--addr", server.address, "--thread", TOO_LONG_ID])
    assert status == exits.USAGE
    lines = err_lines(capsys)
    assert lines
    assert all(line.startswith("pioneer-grpc watch: thread_id: ") for line in lines)


async def test_history_to_an_unreachable_server_is_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    address = f"127.0.0.1:{free_port()}"
    assert await asyncio.to_thread(main, ["history", "t", "--addr", address]) == exits.FAILURE
    [line] = err_lines(capsys)
    assert line.startswith(f"pioneer-grpc history: no answer from {address}: is the server running")


async def test_watch_to_an_unreachable_server_is_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    address = f"127.0.0.1:{free_port()}"
    status = await asyncio.to_thread(main, ["watch", "--addr", address, "--max-failures", "0"])
    assert status == exits.FAILURE
    assert err_lines(capsys)[-1].startswith(f"pioneer-grpc watch: gave up: {address} answered nothing")


@pytest.mark.parametrize(
    "argv",
    [
        ["compile", "x.json", "--no-such-flag"],
        ["render", "x.json"],  # --provider is required
        ["history"],  # the thread is required
        ["watch", "--after", "soon"],
        ["serve", "--grace-seconds", "long"],
    ],
)
def test_a_bad_flag_is_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == exits.USAGE
    assert err_lines(capsys)[-1].startswith(f"pioneer-grpc {argv[0]}: error: ")


def test_a_flag_value_out_of_range_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch", "--count", "-1"]) == exits.USAGE
    assert err_lines(capsys) == [
        "pioneer-grpc watch: --after, --count and --max-failures must not be negative"
    ]


def test_a_bad_serve_configuration_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--listen", "not-an-address", "--home", str(tmp_path)]) == exits.USAGE
    [line] = err_lines(capsys)
    assert line.startswith("pioneer-grpc serve: configuration error: flag --listen: invalid value")


def test_a_missing_serve_config_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.toml"
    assert main(["serve", "--config", str(missing), "--home", str(tmp_path)]) == exits.USAGE
    [line] = err_lines(capsys)
    assert line.startswith("pioneer-grpc serve: configuration error: ")
