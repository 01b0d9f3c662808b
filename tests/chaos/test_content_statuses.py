"""Request content never ends in INTERNAL, and a request's filesystem error is never a database one."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import struct_pb2

from pioneer_grpc import reasons
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.reasons import INFRASTRUCTURE_REASONS
from pioneer_grpc.server.health import DatabaseHealth
from pioneer_grpc.v1 import chat_pb2, history_pb2, provider_service_pb2
from tests.chaos.conftest import health_status
from tests.support import failure

P = provider_service_pb2
PROVIDERS = list(SPECS)


async def _refusal(call) -> tuple[grpc.StatusCode, str, str]:
    """(code, ErrorInfo reason, message) of a call that must fail."""
    failed = await failure(call)
    return failed.code, failed.reason, failed.message


def _user(text: str = "hi") -> chat_pb2.ChatMessage:
    return chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content=text)


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
async def test_a_claude_render_with_a_non_finite_tool_schema_is_invalid_argument(server, number):
    client = await server.client()
    schema = struct_pb2.Struct()
    schema.update({"type": "object", "properties": {"x": {"type": "number", "maximum": number}}})
    request = chat_pb2.ChatRequest(
        model="claude-3-haiku",
        messages=[_user()],
        tools=[chat_pb2.ToolDefinition(name="t", parameters=schema)],
    )
    request.compiled_prompt.stable_system_text = "stable " * 50
    code, _, message = await _refusal(
        client.render_chat_request(provider=P.PROVIDER_ANTHROPIC_MESSAGES, chat_request=request)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "tools[0].parameters" in message


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_rendering_a_lone_surrogate_is_invalid_argument_or_rendered(server, provider):
    client = await server.client()
    request = chat_pb2.ChatRequest(
        model="claude-3-haiku",
        messages=[
            _user(),
            chat_pb2.ChatMessage(
                role=chat_pb2.CHAT_ROLE_ASSISTANT,
                tool_calls=[dict(id="c1", name="f", arguments='{"a":"x\\ud800y","ok":"\\ud83d\\ude00"}')],
            ),
            chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_TOOL, tool_call_id="c1", content="r"),
        ],
    )
    call = client.render_chat_request(provider=provider, chat_request=request)
    if SPECS[provider].parsed_arguments:  # Anthropic, Gemini, Bedrock: arguments go as a JSON object
        code, _, message = await _refusal(call)
        assert code == grpc.StatusCode.INVALID_ARGUMENT
        assert "messages[1].tool_calls[0].arguments" in message
        assert "surrogate" in message
    else:
        # OpenAI takes the arguments as the text the model produced: sent as they are.
        body = (await call).body_json
        assert "\\\\ud800" in body


async def test_an_integer_of_5000_digits_in_tool_arguments_is_invalid_argument_at_append(server):
    client = await server.client()
    await client.create_thread(thread_id="t", config=history_pb2.ThreadConfig(model="gpt-4o"))
    entry = history_pb2.ConversationEntry(entry_id="e1", turn_id="u1", role=history_pb2.ENTRY_ROLE_ASSISTANT)
    entry.tool_calls.add(id="c1", name="f", arguments='{"a": ' + "9" * 5000 + "}")
    code, _, message = await _refusal(client.append_entries(thread_id="t", entries=[entry]))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "entries[0].tool_calls[0].arguments" in message


@pytest.mark.parametrize(
    ("where", "code", "reason", "errno_name"),
    [
        ("a-file", grpc.StatusCode.FAILED_PRECONDITION, reasons.WORKSPACE_UNUSABLE, "EEXIST"),
        ("a-file/below", grpc.StatusCode.FAILED_PRECONDITION, reasons.WORKSPACE_UNUSABLE, "ENOTDIR"),
        ("n" * 300, grpc.StatusCode.INVALID_ARGUMENT, reasons.INVALID_ARGUMENT, "ENAMETOOLONG"),
    ],
)
async def test_a_bootstrap_root_the_filesystem_refuses_is_the_requests_fault(
    server_factory, monkeypatch, where, code, reason, errno_name
):
    pokes: list[None] = []
    monkeypatch.setattr(DatabaseHealth, "poke", lambda self: pokes.append(None))
    server = await server_factory()
    (server.home / "a-file").write_text("not a folder")
    client = await server.client()
    got = await _refusal(client.ensure_bootstrap_files(workspace_root=str(server.home / where)))
    assert got[:2] == (code, reason)
    assert errno_name in got[2]
    assert reason not in INFRASTRUCTURE_REASONS
    assert pokes == []
    assert await health_status(server.channel()) == 1  # the wire itself: the standard health service
