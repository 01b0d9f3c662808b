"""What a newcomer meets first in the CLI: addresses, a missing thread, a server that is down, a typo in
the JSON, a role by its short name, a model rendered for another provider, the bootstrap files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pioneer_grpc.cli import exits, main
from pioneer_grpc.cli.address import server_address
from tests.support import free_port


@pytest.fixture(autouse=True)
def no_server_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PIONEER_CONFIG", "PIONEER_HOME", "PIONEER_EXTRA_HOMES", "PIONEER_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("localhost", "localhost:50051"),
        ("localhost:7000", "localhost:7000"),
        ("http://127.0.0.1:7000", "127.0.0.1:7000"),
        ("http://example.org/", "example.org:50051"),
        ("[::1]", "[::1]:50051"),
        ("[::1]:7000", "[::1]:7000"),
    ],
)
def test_an_address_without_a_port_goes_to_50051_and_http_is_taken_off(given: str, meant: str) -> None:
    assert server_address(given) == meant


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("https://example.org", "these commands speak plaintext gRPC, not TLS; give HOST:PORT"),
        ("localhost:http", "the port must be a number from 1 to 65535"),
        ("localhost:70000", "the port must be a number from 1 to 65535"),
        ("host/path", "give HOST:PORT"),
    ],
)
def test_an_address_that_cannot_be_used_is_refused_in_one_line(
    given: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["history", "t", "--addr", given])
    assert exited.value.code == exits.USAGE
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"pioneer-grpc history: error: argument --addr: {given!r}: {said}"), last


async def test_history_reaches_a_server_given_as_an_http_url(server, capsys: pytest.CaptureFixture[str]):
    await asyncio.to_thread(main, ["history", "nosuch", "--addr", f"http://{server.address}"])
    assert "no answer" not in capsys.readouterr().err


async def test_a_server_that_is_down_is_named_without_grpc_jargon(capsys: pytest.CaptureFixture[str]):
    address = f"127.0.0.1:{free_port()}"
    assert await asyncio.to_thread(main, ["history", "t", "--addr", address]) == exits.FAILURE
    assert capsys.readouterr().err.splitlines() == [
        f"pioneer-grpc history: no answer from {address}: is the server running at {address}? "
        "(`make run` starts one)"
    ]
    status = await asyncio.to_thread(main, ["watch", "--addr", address, "--max-failures", "1"])
    assert status == exits.FAILURE
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"pioneer-grpc watch: no answer from {address}; resuming after event 0 in 0.2s"
    assert lines[-1] == (
        f"pioneer-grpc watch: gave up: {address} answered nothing in 1 reconnects: "
        f"is the server running at {address}? --retry-forever keeps trying"
    )
    assert not any("ipv4" in line or "failed to connect" in line for line in lines)


async def test_watching_a_thread_that_does_not_exist_says_so(server, capsys: pytest.CaptureFixture[str]):
    status = await asyncio.wait_for(
        asyncio.to_thread(main, ["watch", "--addr", server.address, "--thread", "nosuch"]), 60
    )
    assert status == exits.FAILURE
    assert capsys.readouterr().err.splitlines() == [
        "pioneer-grpc watch: thread 'nosuch' does not exist (NOT_FOUND): create it first, "
        "or leave out --thread to watch every thread"
    ]


def _request(tmp_path: Path, body: dict[str, object]) -> str:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return str(path)


def test_a_misspelled_field_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = _request(tmp_path, {"model": "m", "messages": [{"role": "CHAT_ROLE_USER", "contnt": "hi"}]})
    assert main(["render", "--provider", "anthropic", path]) == exits.USAGE
    assert capsys.readouterr().err.splitlines() == [
        f'pioneer-grpc render: {path} is not a ChatRequest in protobuf JSON: unknown field "contnt" '
        'in ChatMessage at ChatRequest.messages[0]; did you mean "content"?'
    ]


def test_a_role_by_its_short_name_lists_the_accepted_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    path = _request(tmp_path, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert main(["render", "--provider", "anthropic", path]) == exits.USAGE
    assert capsys.readouterr().err.splitlines() == [
        f'pioneer-grpc render: {path} is not a ChatRequest in protobuf JSON: "user" is not a ChatRole at '
        'ChatRequest.messages[0].role; did you mean "CHAT_ROLE_USER"? (one of CHAT_ROLE_UNSPECIFIED, '
        "CHAT_ROLE_SYSTEM, CHAT_ROLE_USER, CHAT_ROLE_ASSISTANT, CHAT_ROLE_TOOL)"
    ]


def test_render_prints_its_notices_and_a_model_of_another_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    messages = [
        {"role": "CHAT_ROLE_USER", "content": "hi"},
        {"role": "CHAT_ROLE_ASSISTANT", "toolCalls": [{"id": "c1", "name": "ls", "arguments": "{}"}]},
        {"role": "CHAT_ROLE_USER", "content": "go on"},
    ]
    path = _request(tmp_path, {"model": "gpt-4.1-mini", "messages": messages})
    assert main(["render", "--provider", "anthropic", path]) == exits.OK
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("POST /v1/messages")
    assert any(
        line.startswith(
            "pioneer-grpc render: notice interrupted_tool_call_answered at chat_request.messages[1]"
        )
        for line in lines
    ), lines
    assert any(
        line.startswith("pioneer-grpc render: notice model_family_mismatch at chat_request.model")
        for line in lines
    ), lines
    assert main(["render", "--provider", "openai-chat", path]) == exits.OK
    assert "model_family_mismatch" not in capsys.readouterr().err


def test_compile_says_what_each_missing_bootstrap_file_is_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    home = tmp_path / "home"
    home.mkdir()
    path = tmp_path / "input.json"
    path.write_text("{}", encoding="utf-8")
    assert main(["compile", str(path), "--home", str(home)]) == exits.OK
    err = capsys.readouterr().err.splitlines()
    at = err.index("diagnostic missing_file: bootstrap file `SOUL.md` is missing")
    assert err[at + 1].startswith("  SOUL.md (the Soul Core section) says who the assistant is")
    assert "--seed-bootstrap-files" in err[at + 1]
    # USER.md is optional, so its absence is no diagnostic; the CLI still says what it is for.
    assert not any("`USER.md`" in line for line in err)
    assert err[-1] == (
        "note: USER.md is optional: what the assistant should know about you (name, role, preferences), "
        "added to the prompt as the User Persona section. Nothing writes it; "
        f"create {home}/USER.md to use it."
    )
