"""RenderChatRequest end to end through the real server: renders called with the Python client, errors
read from the wire (the status details, their order and count)."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2
from grpc_status import rpc_status

from pioneer_grpc.providers import render
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2, provider_service_pb2_grpc
from tests.conftest import ServerHandle
from tests.providers.cases import PROVIDERS, build

P = provider_service_pb2


def stub(server: ServerHandle) -> provider_service_pb2_grpc.ProviderServiceStub:
    # The wire itself: bad_request reads the raw status details, their order and count.
    return provider_service_pb2_grpc.ProviderServiceStub(server.channel())


async def bad_request(server: ServerHandle, request: P.RenderChatRequestRequest) -> list[tuple[str, str]]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub(server).RenderChatRequest(request, metadata=server.metadata())
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(info.value)
    assert status is not None
    assert status.code == code_pb2.INVALID_ARGUMENT
    details, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
    assert len(status.details) == 2
    assert status.details[0].Unpack(details)
    assert status.details[1].Unpack(info)
    assert (info.reason, info.domain) == ("INVALID_ARGUMENT", "pioneer.v1")
    return [(v.field, v.description) for v in details.field_violations]


@pytest.mark.parametrize("provider_name", list(PROVIDERS))
async def test_renders_what_the_core_renders(server: ServerHandle, provider_name: str) -> None:
    provider = PROVIDERS[provider_name]
    chat_request = build("tool_round_trip", provider)
    options = P.RenderOptions(cache_key_prefix="rpc-", anthropic_min_cache_chars=100)
    client = await server.client()
    response = await client.render_chat_request(provider=provider, chat_request=chat_request, options=options)
    expected = render(provider, chat_request, options)
    assert response.body_json == expected.body_json
    assert response.path == expected.path
    assert response.cache_breakpoints == expected.cache_breakpoints
    if provider == P.PROVIDER_ANTHROPIC_MESSAGES:
        assert response.cache_breakpoints == 4  # the tools, the stable block, two on the conversation


async def test_default_options_when_unset(server: ServerHandle) -> None:
    provider = P.PROVIDER_OPENAI_CHAT_COMPLETIONS
    chat_request = build("plain_compiled", provider)
    client = await server.client()
    response = await client.render_chat_request(provider=provider, chat_request=chat_request)
    assert '"prompt_cache_key":"pioneer-' in response.body_json


async def test_tool_rule_violations_come_back_as_bad_request(server: ServerHandle) -> None:
    chat_request = build("tools_named", P.PROVIDER_ANTHROPIC_MESSAGES)
    chat_request.tools.add(name="get_weather")
    chat_request.tools.add(name="x" * 129)
    chat_request.tool_choice.tool_name = "missing"
    violations = await bad_request(
        server, P.RenderChatRequestRequest(provider=P.PROVIDER_ANTHROPIC_MESSAGES, chat_request=chat_request)
    )
    assert [field for field, _ in violations] == [
        "chat_request.tools[2].name",
        "chat_request.tools[3].name",
        "chat_request.tool_choice.tool_name",
    ]


async def test_missing_provider_model_and_messages(server: ServerHandle) -> None:
    violations = await bad_request(server, P.RenderChatRequestRequest(chat_request=chat_pb2.ChatRequest()))
    assert [field for field, _ in violations] == ["provider", "chat_request.model", "chat_request.messages"]


async def test_bad_option(server: ServerHandle) -> None:
    request = P.RenderChatRequestRequest(
        provider=P.PROVIDER_OPENAI_RESPONSES,
        chat_request=build("plain", P.PROVIDER_OPENAI_RESPONSES),
        options=P.RenderOptions(cache_key_prefix="way too long for a cache key prefix!"),
    )
    assert [field for field, _ in await bad_request(server, request)] == ["options.cache_key_prefix"]
