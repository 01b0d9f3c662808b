"""Anthropic's breakpoints are placed by the model's cache minimum in tokens (the model registry),
the same way by the server and by `pioneer-grpc render`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from google.protobuf import json_format, struct_pb2

from pioneer_grpc.compiler.compile import compile_prompt
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.history.tokens import count_blocking
from pioneer_grpc.providers import cache_points, render_body
from pioneer_grpc.v1 import chat_pb2, prompt_pb2, provider_service_pb2
from tests.conftest import ServerHandle

P = provider_service_pb2

# An agent's usual tools: with them, the default full-profile prompt's cached
# prefix (tools, then the stable system block) holds between 1,024 and 4,096 tokens.
TOOLS = {
    "read_file": ("Read a text file of the workspace and return its content with line numbers.", ["path"]),
    "write_file": ("Create or replace a file of the workspace with the given content.", ["path", "content"]),
    "run_command": ("Run a shell command in the workspace and return its exit code and output.", ["command"]),
    "search_code": (
        "Search the workspace for a regular expression and return the matching lines.",
        ["pattern"],
    ),
    "list_directory": (
        "List the entries of a directory of the workspace, with their kinds and sizes.",
        ["path"],
    ),
    "edit_file": (
        "Replace one exact occurrence of a string in a file of the workspace; "
        "fails when it is absent or repeated.",
        ["path", "old_text", "new_text"],
    ),
    "fetch_url": ("Fetch a web page over HTTPS and return its text, without scripts or styles.", ["url"]),
}


def _tool(name: str, description: str, fields: list[str]) -> chat_pb2.ToolDefinition:
    schema = struct_pb2.Struct()
    schema.update(
        {
            "type": "object",
            "properties": {
                f: {"type": "string", "description": f"The {f} to use for {name}."} for f in fields
            },
            "required": fields,
        }
    )
    return chat_pb2.ToolDefinition(name=name, description=description, parameters=schema)


def _request(home: Path, model: str, tools: bool = True) -> chat_pb2.ChatRequest:
    ensure_bootstrap_files(home)
    payload = compile_prompt(prompt_pb2.PromptCompileInput(workspace_root=str(home)), [home])
    request = chat_pb2.ChatRequest(
        model=model,
        messages=[chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="What changed?")],
        compiled_prompt=payload,
    )
    if tools:
        request.tools.extend(_tool(name, *spec) for name, spec in TOOLS.items())
    return request


async def _system(server: ServerHandle, request: chat_pb2.ChatRequest, **options: int) -> list[dict]:
    client = await server.client()
    reply = await client.render_chat_request(
        provider=P.PROVIDER_ANTHROPIC_MESSAGES,
        chat_request=request,
        options=P.RenderOptions(**options) if options else None,
    )
    return json.loads(reply.body_json)["system"]


def test_the_default_prompt_with_tools_is_between_the_two_minimums(tmp_path: Path):
    request = _request(tmp_path, "claude-sonnet-4-5")
    stable = request.compiled_prompt.stable_system_text
    assert len(stable) < 4_096  # the character rule would place no breakpoint
    body, _ = render_body(P.PROVIDER_ANTHROPIC_MESSAGES, request)
    tools = [
        cache_points.json_text({k: v for k, v in t.items() if k != "cache_control"}) for t in body["tools"]
    ]
    tokens = sum(count_blocking([stable, *tools], "claude_estimate"))
    assert 1_024 <= tokens < 4_096


async def test_a_system_breakpoint_where_the_models_minimum_is_met_and_none_where_not(
    server: ServerHandle, tmp_path: Path
):
    met = await _system(server, _request(tmp_path, "claude-sonnet-4-5-20250929"))  # minimum 1,024
    assert met[0]["cache_control"] == {"type": "ephemeral"}
    not_met = await _system(server, _request(tmp_path, "claude-haiku-4-5"))  # minimum 4,096
    assert "cache_control" not in not_met[0]
    # Without the tools the prefix is under 1,024 tokens: no breakpoint on either.
    bare = await _system(server, _request(tmp_path, "claude-sonnet-4-5", tools=False))
    assert "cache_control" not in bare[0]


async def test_the_callers_character_minimum_still_wins(server: ServerHandle, tmp_path: Path):
    system = await _system(server, _request(tmp_path, "claude-haiku-4-5"), anthropic_min_cache_chars=100)
    assert system[0]["cache_control"] == {"type": "ephemeral"}
    system = await _system(server, _request(tmp_path, "claude-sonnet-4-5"), anthropic_min_cache_chars=100_000)
    assert "cache_control" not in system[0]


async def test_a_model_without_a_published_minimum_keeps_the_character_rule(
    server: ServerHandle, tmp_path: Path
):
    # claude-opus-5 has no cache_min_tokens in the registry: 4,096 characters of the prefix, which
    # the stable block alone does not hold and the tools before it with it do.
    assert "cache_control" not in (await _system(server, _request(tmp_path, "claude-opus-5", tools=False)))[0]
    assert "cache_control" in (await _system(server, _request(tmp_path, "claude-opus-5")))[0]


async def test_the_cli_prints_the_body_the_server_renders(server: ServerHandle, tmp_path: Path):
    # One decision: the stable prompt of about 4,250 characters with the tools gets the same
    # breakpoints from `pioneer-grpc render` as from RenderChatRequest (they disagreed once).
    request = _request(tmp_path, "claude-sonnet-4-5")
    request.compiled_prompt.stable_system_text += "\n" + "x" * (
        4_250 - len(request.compiled_prompt.stable_system_text)
    )
    path = tmp_path / "request.json"
    path.write_text(json_format.MessageToJson(request))
    cli = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "pioneer_grpc.cli", "render", "--provider", "anthropic", str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PIONEER_CONFIG": ""},
    )
    client = await server.client()
    reply = await client.render_chat_request(provider=P.PROVIDER_ANTHROPIC_MESSAGES, chat_request=request)
    assert cli.stdout.rstrip("\n") == reply.body_json
    assert f"(cache breakpoints: {reply.cache_breakpoints})" in cli.stderr
    assert reply.cache_breakpoints == 2
