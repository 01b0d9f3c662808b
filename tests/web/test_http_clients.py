"""curl and Connect's own TypeScript/JavaScript client get the answers gRPC gives, over HTTP and HTTPS.

Each calls CompilePrompt, PrepareTurn (a retry of a round the agent loop made
over gRPC: the same answer) and streams WatchManifests over HTTP/JSON; the
answers are parsed back into the protobuf messages and compared with gRPC's.
`make test` installs the client's npm packages and generates its stubs
(scripts/ts_client.sh); without them the test fails under CI and skips elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

from pioneer_grpc.v1 import (
    manifest_service_pb2,
    manifest_service_pb2_grpc,
    prompt_compiler_service_pb2,
    prompt_compiler_service_pb2_grpc,
    prompt_pb2,
    turn_service_pb2,
)
from tests.support import unavailable_here
from tests.tls import self_signed
from tests.web import connect_http as http
from tests.web.agent_loop import THREAD, AgentLoop

ROOT = Path(__file__).resolve().parents[2]
TS_CLIENT = ROOT / "clients" / "ts"
TOKEN = "contract-token"
# Bounds every client process: none may hang the suite.
CLIENT_SECONDS = 60


def _require(what: str, present: bool, how: str) -> None:
    if present:
        return
    unavailable_here(f"{what} is missing: {how}")


@pytest.fixture(params=["http", "https"])
async def scenario(server_factory, tmp_path, request):
    """A live server after the two-turn loop; the requests both clients send, and gRPC's answers.

    Over https both listeners serve TLS from the same --tls-cert (the clients trust it, and name
    the server localhost, as its certificate does)."""
    if request.param == "https":
        cert, key, cert_pem = self_signed(tmp_path)
        handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN, tls_cert=cert, tls_key=key)
        channel = grpc.aio.secure_channel(
            f"localhost:{handle.running.port}", grpc.ssl_channel_credentials(root_certificates=cert_pem)
        )
        handle._channels.append(channel)
        base = f"https://localhost:{handle.running.http.port}"
    else:
        cert = None
        handle = await server_factory(http_listen="127.0.0.1:0", token=TOKEN)
        channel = handle.channel()
        base = f"http://{handle.running.http_address}"
    loop = AgentLoop(channel, handle.metadata(), handle.home)
    await loop.two_turns()
    compile_request = prompt_compiler_service_pb2.CompilePromptRequest(
        input=prompt_pb2.PromptCompileInput(
            profile=prompt_pb2.PROMPT_PROFILE_FULL, extra_system="Date: today"
        )
    )
    compiler = prompt_compiler_service_pb2_grpc.PromptCompilerServiceStub(channel)
    compiled = await compiler.CompilePrompt(compile_request, metadata=handle.metadata())
    watcher = manifest_service_pb2_grpc.ManifestServiceStub(channel)
    events = []
    async for message in watcher.WatchManifests(
        manifest_service_pb2.WatchManifestsRequest(thread_id=THREAD), metadata=handle.metadata()
    ):
        if message.HasField("event"):
            events.append(message.event)
        if len(events) == 2:
            break
    return {
        "handle": handle,
        "base": base,
        # The certificate a client must trust (None over plain HTTP).
        "cert": cert,
        "requests": {
            "compilePrompt": json_format.MessageToDict(compile_request),
            "prepareTurn": json_format.MessageToDict(loop.requests[-1]),
            "watch": {"request": {"threadId": THREAD}, "events": len(events)},
        },
        "grpc": {"compilePrompt": compiled, "prepareTurn": loop.replies[-1], "events": events},
    }


def assert_same_answers(got: dict, expected: dict) -> None:
    compiled = json_format.Parse(
        json.dumps(got["compilePrompt"]), prompt_compiler_service_pb2.CompilePromptResponse()
    )
    assert compiled == expected["compilePrompt"]
    prepared = json_format.Parse(json.dumps(got["prepareTurn"]), turn_service_pb2.PrepareTurnResponse())
    assert prepared == expected["prepareTurn"]
    assert prepared.provider_body_json
    assert prepared.chat_request.messages
    events = [json_format.Parse(json.dumps(e), manifest_service_pb2.ManifestEvent()) for e in got["events"]]
    assert events == expected["events"]
    # Turn 1, then turn 2 after SOUL.md changed.
    assert [e.turn_id for e in events] == ["turn-1", "turn-2"]


async def _run(*command: str, env: dict[str, str] | None = None) -> bytes:
    process = await asyncio.create_subprocess_exec(
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), CLIENT_SECONDS)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, err.decode()
    return out


async def test_typescript_client_answers_as_grpc(scenario, tmp_path):
    _require(
        "clients/ts/gen (Connect's client and its stubs)",
        (TS_CLIENT / "gen").is_dir() and (TS_CLIENT / "node_modules").is_dir(),
        "run `bash scripts/ts_client.sh` (`make test` does)",
    )
    node = shutil.which("node")
    _require("node", node is not None, "install Node 20 or later")
    requests = tmp_path / "requests.json"
    requests.write_text(json.dumps(scenario["requests"]))
    env = {"PIONEER_HTTP": scenario["base"], "PIONEER_TOKEN": TOKEN}
    if scenario["cert"] is not None:
        env["NODE_EXTRA_CA_CERTS"] = str(scenario["cert"])
    out = await _run(str(node), str(TS_CLIENT / "contract.mjs"), str(requests), env=env)
    assert_same_answers(json.loads(out), scenario["grpc"])


def _trust(cert: Path | None) -> list[str]:
    return [] if cert is None else ["--cacert", str(cert)]


async def _curl_stream(url: str, request: dict, events: int, tmp_path: Path, cert: Path | None) -> list[dict]:
    body = tmp_path / "watch.bin"
    body.write_bytes(http.envelope(request))
    process = await asyncio.create_subprocess_exec(
        "curl", "-sS", "-N", "--max-time", str(CLIENT_SECONDS), *_trust(cert),
        "-H", "content-type: application/connect+json",
        "-H", f"authorization: Bearer {TOKEN}",
        "--data-binary", f"@{body}", url,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    found: list[dict] = []
    try:
        while len(found) < events:
            head = await process.stdout.readexactly(5)
            message = json.loads(await process.stdout.readexactly(int.from_bytes(head[1:5], "big")))
            assert not head[0] & http.END_STREAM, message
            if "event" in message:
                found.append(message["event"])
    finally:
        process.kill()
        await process.wait()
    return found


async def test_curl_answers_as_grpc(scenario, tmp_path):
    curl = shutil.which("curl")
    _require("curl", curl is not None, "apt-get install -y curl")
    base = scenario["base"]
    got = {}
    for name, path in [
        ("compilePrompt", "/pioneer.v1.PromptCompilerService/CompilePrompt"),
        ("prepareTurn", "/pioneer.v1.TurnService/PrepareTurn"),
    ]:
        request = tmp_path / f"{name}.json"
        request.write_text(json.dumps(scenario["requests"][name]))
        got[name] = json.loads(
            await _run(
                str(curl),
                "-sS",
                *_trust(scenario["cert"]),
                "--fail-with-body",
                "--max-time",
                str(CLIENT_SECONDS),
                "-H",
                "content-type: application/json",
                "-H",
                f"authorization: Bearer {TOKEN}",
                "--data-binary",
                f"@{request}",
                base + path,
            )
        )
    watch = scenario["requests"]["watch"]
    got["events"] = await _curl_stream(
        base + "/pioneer.v1.ManifestService/WatchManifests",
        watch["request"],
        watch["events"],
        tmp_path,
        scenario["cert"],
    )
    assert_same_answers(got, scenario["grpc"])
