"""Every rule violation is InvalidArgument naming the field; the tool rules come first."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import LIST_FILES, PROVIDERS, WEATHER

P = provider_service_pb2
ALL = list(PROVIDERS.values())
OPENAI = [P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_OPENAI_RESPONSES]
LONG_NAMES = [P.PROVIDER_ANTHROPIC_MESSAGES, P.PROVIDER_GEMINI_GENERATE_CONTENT]
USER = {"role": "CHAT_ROLE_USER", "content": "hi"}


def request(**fields: Any) -> chat_pb2.ChatRequest:
    d: dict[str, Any] = {"model": "m", "messages": [USER], **fields}
    return json_format.ParseDict(d, chat_pb2.ChatRequest())


def violations(
    provider: int, req: chat_pb2.ChatRequest, options: P.RenderOptions | None = None
) -> dict[str, str]:
    with pytest.raises(InvalidArgument) as info:
        render(provider, req, options)
    found = {v.field: v.description for v in info.value.violations}
    assert found, "InvalidArgument without field violations"
    return found


def only(provider: int, req: chat_pb2.ChatRequest, field: str) -> str:
    found = violations(provider, req)
    assert list(found) == [field]
    return found[field]


# --- the original's tool rules -------------------------------------------------------------


@pytest.mark.parametrize("provider", ALL)
def test_tool_name_must_not_be_empty(provider: int) -> None:
    only(provider, request(tools=[WEATHER, {"name": ""}]), "chat_request.tools[1].name")


@pytest.mark.parametrize("provider", ALL)
@pytest.mark.parametrize("name", ["get weather", "get.weather", "ns:get", "wetter/heute", "café"])
def test_tool_name_charset(provider: int, name: str) -> None:
    if provider == P.PROVIDER_GEMINI_GENERATE_CONTENT and name in ("get.weather", "ns:get"):
        # Gemini documents `.` and `:` in function names.
        body = json.loads(render(provider, request(tools=[WEATHER, {"name": name}])).body_json)
        assert body["tools"][0]["functionDeclarations"][1]["name"] == name
        return
    only(provider, request(tools=[WEATHER, {"name": name}]), "chat_request.tools[1].name")


@pytest.mark.parametrize("provider", [*OPENAI, P.PROVIDER_GEMINI_GENERATE_CONTENT])
def test_tool_name_max_64_for_openai_and_gemini(provider: int) -> None:
    render(provider, request(tools=[{"name": "a" * 64}]))
    only(provider, request(tools=[{"name": "a" * 65}]), "chat_request.tools[0].name")


def test_tool_name_max_128_for_anthropic() -> None:
    render(P.PROVIDER_ANTHROPIC_MESSAGES, request(tools=[{"name": "a" * 128}]))
    only(P.PROVIDER_ANTHROPIC_MESSAGES, request(tools=[{"name": "a" * 129}]), "chat_request.tools[0].name")


@pytest.mark.parametrize("provider", ALL)
def test_tool_names_are_unique(provider: int) -> None:
    description = only(provider, request(tools=[WEATHER, LIST_FILES, WEATHER]), "chat_request.tools[2].name")
    assert "tools[0]" in description


@pytest.mark.parametrize("provider", ALL)
@pytest.mark.parametrize(
    "parameters",
    [{"type": "string"}, {"properties": {"a": {"type": "string"}}}, {"type": ["object", "null"]}],
)
def test_parameters_must_be_an_object_schema(provider: int, parameters: dict[str, Any]) -> None:
    only(
        provider, request(tools=[{"name": "t", "parameters": parameters}]), "chat_request.tools[0].parameters"
    )


@pytest.mark.parametrize("provider", ALL)
def test_empty_parameters_mean_no_arguments(provider: int) -> None:
    for tool in ({"name": "t"}, {"name": "t", "parameters": {}}):
        body = json.loads(render(provider, request(tools=[tool])).body_json)
        assert '{"type":"object","properties":{}}' in json.dumps(body, separators=(",", ":"))


@pytest.mark.parametrize("provider", ALL)
def test_named_choice_must_exist(provider: int) -> None:
    # Where the API forces a call only for the models that support it (Converse), a forced choice for
    # a model the registry does not say takes one ("m") is refused too.
    forced = ["chat_request.tool_choice.mode"] if SPECS[provider].forced_choice_per_model else []
    req = request(tools=[WEATHER], toolChoice={"mode": "TOOL_CHOICE_MODE_TOOL", "toolName": "get_time"})
    found = violations(provider, req)
    assert list(found) == ["chat_request.tool_choice.tool_name", *forced]
    assert "get_time" in found["chat_request.tool_choice.tool_name"]
    req = request(tools=[WEATHER], toolChoice={"mode": "TOOL_CHOICE_MODE_TOOL"})
    assert list(violations(provider, req)) == ["chat_request.tool_choice.tool_name", *forced]
    req = request(toolChoice={"mode": "TOOL_CHOICE_MODE_TOOL", "toolName": "get_weather"})
    only(provider, req, "chat_request.tool_choice.tool_name")


@pytest.mark.parametrize("provider", ALL)
def test_tool_name_without_tool_mode_is_rejected(provider: int) -> None:
    req = request(tools=[WEATHER], toolChoice={"mode": "TOOL_CHOICE_MODE_AUTO", "toolName": "get_weather"})
    only(provider, req, "chat_request.tool_choice.tool_name")


@pytest.mark.parametrize("provider", ALL)
def test_required_needs_a_tool(provider: int) -> None:
    only(provider, request(toolChoice={"mode": "TOOL_CHOICE_MODE_REQUIRED"}), "chat_request.tool_choice.mode")


@pytest.mark.parametrize("provider", ALL)
@pytest.mark.parametrize("mode", ["TOOL_CHOICE_MODE_AUTO", "TOOL_CHOICE_MODE_NONE"])
def test_no_tools_clears_choice_and_parallel(provider: int, mode: str) -> None:
    body = render(provider, request(toolChoice={"mode": mode}, parallelToolCalls=False)).body_json
    for key in ("tool_choice", "toolConfig", "parallel_tool_calls", "disable_parallel_tool_use", '"tools"'):
        assert key not in body


@pytest.mark.parametrize("provider", ALL)
def test_tool_rules_are_reported_first_and_together(provider: int) -> None:
    req = request(
        model="",
        tools=[{"name": "bad name"}, {"name": "t", "parameters": {"type": "array"}}],
        toolChoice={"mode": "TOOL_CHOICE_MODE_TOOL", "toolName": "nope"},
    )
    forced = ["chat_request.tool_choice.mode"] if SPECS[provider].forced_choice_per_model else []
    assert list(violations(provider, req)) == [
        "chat_request.tools[0].name",
        "chat_request.tools[1].parameters",
        "chat_request.tool_choice.tool_name",
        "chat_request.model",
        *forced,
    ]


# --- the rest of the request ----------------------------------------------------------------


@pytest.mark.parametrize("provider", ALL)
def test_model_required(provider: int) -> None:
    only(provider, request(model=""), "chat_request.model")


def test_provider_required() -> None:
    assert list(violations(P.PROVIDER_UNSPECIFIED, request())) == ["provider"]
    assert list(violations(99, request())) == ["provider"]


@pytest.mark.parametrize("provider", ALL)
def test_messages_required(provider: int) -> None:
    only(provider, request(messages=[]), "chat_request.messages")


@pytest.mark.parametrize("provider", LONG_NAMES)
def test_system_only_conversation_rejected_where_system_goes_apart(provider: int) -> None:
    req = request(messages=[{"role": "CHAT_ROLE_SYSTEM", "content": "Be brief."}])
    only(provider, req, "chat_request.messages")
    for openai_provider in OPENAI:
        render(openai_provider, req)


def test_one_violation_per_problem() -> None:
    req = request(maxTokens=0, reasoning={"effort": "REASONING_EFFORT_HIGH"})
    with pytest.raises(InvalidArgument) as info:
        render(P.PROVIDER_ANTHROPIC_MESSAGES, req)
    assert [v.field for v in info.value.violations] == ["chat_request.max_tokens"]


@pytest.mark.parametrize("provider", ALL)
def test_tool_message_needs_tool_call_id(provider: int) -> None:
    req = request(messages=[USER, {"role": "CHAT_ROLE_TOOL", "name": "t", "content": "x"}])
    only(provider, req, "chat_request.messages[1].tool_call_id")


@pytest.mark.parametrize("provider", ALL)
def test_role_required(provider: int) -> None:
    only(provider, request(messages=[USER, {"content": "x"}]), "chat_request.messages[1].role")


@pytest.mark.parametrize("provider", ALL)
def test_empty_message_rejected(provider: int) -> None:
    only(
        provider,
        request(messages=[USER, {"role": "CHAT_ROLE_ASSISTANT"}]),
        "chat_request.messages[1].content",
    )


@pytest.mark.parametrize("provider", ALL)
def test_tool_calls_need_id_and_name(provider: int) -> None:
    req = request(messages=[USER, {"role": "CHAT_ROLE_ASSISTANT", "toolCalls": [{"arguments": "{}"}]}])
    assert set(violations(provider, req)) == {
        "chat_request.messages[1].tool_calls[0].id",
        "chat_request.messages[1].tool_calls[0].name",
    }


@pytest.mark.parametrize("provider", ALL)
def test_only_assistants_call_tools(provider: int) -> None:
    req = request(messages=[{**USER, "toolCalls": [{"id": "c", "name": "t"}]}])
    only(provider, req, "chat_request.messages[0].tool_calls")


@pytest.mark.parametrize("provider", LONG_NAMES)
@pytest.mark.parametrize(
    "arguments",
    ["{not json", "[1, 2]", '"text"', '{"x": NaN}', '{"x": -Infinity}', '{"x": 1e400}'],
)
def test_arguments_must_be_a_json_object_where_parsed(provider: int, arguments: str) -> None:
    call = {"id": "c", "name": "t", "arguments": arguments}
    req = request(messages=[USER, {"role": "CHAT_ROLE_ASSISTANT", "toolCalls": [call]}])
    only(provider, req, "chat_request.messages[1].tool_calls[0].arguments")


@pytest.mark.parametrize("provider", OPENAI)
def test_openai_sends_arguments_as_produced(provider: int) -> None:
    call = {"id": "c", "name": "t", "arguments": "{not json"}
    req = request(messages=[USER, {"role": "CHAT_ROLE_ASSISTANT", "toolCalls": [call]}])
    assert "{not json" in json.loads(render(provider, req).body_json).__repr__()


def test_gemini_needs_the_tool_name_of_a_result() -> None:
    # A result for no call was rendered for OpenAI and Anthropic, which refuse it
    # (issue 12): it is now rejected for every provider, naming tool_call_id.
    req = request(messages=[USER, {"role": "CHAT_ROLE_TOOL", "toolCallId": "orphan", "content": "x"}])
    found = violations(P.PROVIDER_GEMINI_GENERATE_CONTENT, req)
    assert set(found) == {"chat_request.messages[1].name", "chat_request.messages[1].tool_call_id"}
    for provider in (P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_ANTHROPIC_MESSAGES):
        only(provider, req, "chat_request.messages[1].tool_call_id")


@pytest.mark.parametrize("provider", ALL)
def test_media_only_on_user_messages(provider: int) -> None:
    image = {"image": {"mimeType": "image/png", "uri": "https://example.com/a.png"}}
    req = request(messages=[USER, {"role": "CHAT_ROLE_ASSISTANT", "content": "x", "contentParts": [image]}])
    only(provider, req, "chat_request.messages[1].content_parts[0].image")


@pytest.mark.parametrize("provider", ALL)
@pytest.mark.parametrize(
    "media",
    [
        {},
        {"data": "AAAA"},
        {"uri": "data:image/png,notbase64"},
        {"uri": "data:image/png;base64,@@@"},
        {"uri": " "},
    ],
)
def test_media_needs_a_usable_source(provider: int, media: dict[str, str]) -> None:
    req = request(messages=[{**USER, "contentParts": [{"image": media}]}])
    only(provider, req, "chat_request.messages[0].content_parts[0].image")


@pytest.mark.parametrize(
    ("provider", "part", "field"),
    [
        (P.PROVIDER_OPENAI_CHAT_COMPLETIONS, {"image": {"uri": "file-abc"}}, "image"),
        (P.PROVIDER_OPENAI_CHAT_COMPLETIONS, {"file": {"uri": "https://x/a.pdf"}}, "file"),
        (P.PROVIDER_OPENAI_CHAT_COMPLETIONS, {"audio": {"mimeType": "audio/wav", "data": "AAAA"}}, "audio"),
        (P.PROVIDER_OPENAI_RESPONSES, {"video": {"mimeType": "video/mp4", "data": "AAAA"}}, "video"),
        (P.PROVIDER_ANTHROPIC_MESSAGES, {"image": {"mimeType": "image/bmp", "data": "AAAA"}}, "image"),
        (P.PROVIDER_ANTHROPIC_MESSAGES, {"file": {"mimeType": "application/zip", "data": "AAAA"}}, "file"),
        (P.PROVIDER_ANTHROPIC_MESSAGES, {"audio": {"mimeType": "audio/wav", "data": "AAAA"}}, "audio"),
        (P.PROVIDER_GEMINI_GENERATE_CONTENT, {"file": {"uri": "https://x/a.pdf"}}, "file.mime_type"),
    ],
)
def test_provider_specific_media_limits(provider: int, part: dict[str, Any], field: str) -> None:
    # A model the registry does not know is taken to read every kind: the API's own limits decide.
    req = request(model="house-model-7", messages=[{**USER, "contentParts": [part]}])
    only(provider, req, f"chat_request.messages[0].content_parts[0].{field}")


def test_gemini_takes_audio_and_video() -> None:
    parts = [
        {"audio": {"mimeType": "audio/wav", "data": "AAAA"}},
        {
            "video": {
                "mimeType": "video/mp4",
                "uri": "https://generativelanguage.googleapis.com/v1beta/files/x",
            }
        },
    ]
    body = json.loads(
        render(
            P.PROVIDER_GEMINI_GENERATE_CONTENT, request(messages=[{**USER, "contentParts": parts}])
        ).body_json
    )
    assert body["contents"][0]["parts"][1:] == [
        {"inlineData": {"mimeType": "audio/wav", "data": "AAAA"}},
        {
            "fileData": {
                "mimeType": "video/mp4",
                "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/x",
            }
        },
    ]


@pytest.mark.parametrize("provider", ALL)
def test_reasoning_disabled_conflicts_with_effort(provider: int) -> None:
    req = request(reasoning={"disabled": True, "effort": "REASONING_EFFORT_HIGH"})
    only(provider, req, "chat_request.reasoning.disabled")


def test_anthropic_thinking_budget_limits() -> None:
    provider = P.PROVIDER_ANTHROPIC_MESSAGES
    only(provider, request(reasoning={"budgetTokens": 1000}), "chat_request.reasoning.budget_tokens")
    only(
        provider,
        request(reasoning={"budgetTokens": 4096}, maxTokens=4096),
        "chat_request.reasoning.budget_tokens",
    )
    # An effort-derived budget is fitted under max_tokens, unless there is no room for thinking.
    body = json.loads(
        render(provider, request(reasoning={"effort": "REASONING_EFFORT_HIGH"}, maxTokens=5000)).body_json
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4999}
    only(
        provider,
        request(reasoning={"effort": "REASONING_EFFORT_LOW"}, maxTokens=1024),
        "chat_request.max_tokens",
    )
    # Without max_tokens the default leaves the answer its 4,096 tokens.
    body = json.loads(render(provider, request(reasoning={"effort": "REASONING_EFFORT_HIGH"})).body_json)
    assert body["max_tokens"] == 4096 + 16384


@pytest.mark.parametrize("provider", ALL)
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"maxTokens": 0}, "chat_request.max_tokens"),
        ({"temperature": -0.5}, "chat_request.temperature"),
        ({"temperature": "NaN"}, "chat_request.temperature"),
        ({"reasoning": {"budgetTokens": -1}}, "chat_request.reasoning.budget_tokens"),
    ],
)
def test_numbers(provider: int, fields: dict[str, Any], field: str) -> None:
    only(provider, request(**fields), field)


@pytest.mark.parametrize("provider", ALL)
@pytest.mark.parametrize(
    ("options", "field"),
    [
        (P.RenderOptions(anthropic_min_cache_chars=-1), "options.anthropic_min_cache_chars"),
        (P.RenderOptions(cache_key_prefix="x" * 33), "options.cache_key_prefix"),
        (P.RenderOptions(cache_key_prefix="has space"), "options.cache_key_prefix"),
    ],
)
def test_options(provider: int, options: P.RenderOptions, field: str) -> None:
    assert list(violations(provider, request(), options)) == [field]


def test_gemini_model_goes_in_the_path() -> None:
    provider = P.PROVIDER_GEMINI_GENERATE_CONTENT
    rendered = render(provider, request(model="models/gemini-2.5-pro"))
    assert rendered.path == "/v1beta/models/gemini-2.5-pro:generateContent"
    assert "gemini-2.5-pro" not in rendered.body_json
    only(provider, request(model="gemini/../x"), "chat_request.model")


def test_schema_numbers_and_key_order_are_canonical() -> None:
    tool = {
        "name": "t",
        "parameters": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1, "multipleOf": 0.5}},
        },
    }

    def rendered() -> str:
        return render(P.PROVIDER_OPENAI_CHAT_COMPLETIONS, request(tools=[tool])).body_json

    body = rendered()
    assert '"n":{"minimum":1,"multipleOf":0.5,"type":"integer"}' in body
    assert body == rendered()


def test_callers_name_their_own_fields() -> None:
    with pytest.raises(InvalidArgument) as info:
        render(
            P.PROVIDER_OPENAI_CHAT_COMPLETIONS,
            request(model=""),
            P.RenderOptions(cache_key_prefix="bad prefix"),
            path="prepared.chat_request",
            options_path="render_options",
        )
    assert [v.field for v in info.value.violations] == [
        "render_options.cache_key_prefix",
        "prepared.chat_request.model",
    ]


@pytest.mark.parametrize("provider", ALL)
def test_only_the_compilers_marker_is_accepted(provider: int) -> None:
    req = request(compiledPrompt={"stableSystemText": "a\nb", "boundaryMarker": "\n"})
    only(provider, req, "chat_request.compiled_prompt.boundary_marker")


@pytest.mark.parametrize("provider", LONG_NAMES)
def test_integers_past_64_bits_in_arguments_are_written_exactly(provider: int) -> None:
    big = 2**70 + 1
    call = {"id": "c", "name": "t", "arguments": json.dumps({"n": big, "m": -big})}
    req = request(messages=[USER, {"role": "CHAT_ROLE_ASSISTANT", "toolCalls": [call]}])
    body = render(provider, req).body_json
    assert f'"n":{big},"m":{-big}' in body


def test_parts_checked_by_the_caller_are_only_counted() -> None:
    from pioneer_grpc.caps.chat import MAX_MESSAGES

    req = request(messages=[USER] * (MAX_MESSAGES + 1))
    with pytest.raises(InvalidArgument) as info:
        render(P.PROVIDER_ANTHROPIC_MESSAGES, req, capped_parts=True)
    found = {v.field: v.description for v in info.value.violations}
    assert found == {"chat_request.messages": f"at most {MAX_MESSAGES:,} items (got {MAX_MESSAGES + 1:,})"}
    # The request's own fields are still walked.
    req = request(tools=[{"name": "t", "description": "d" * 100_000}])
    with pytest.raises(InvalidArgument) as info:
        render(P.PROVIDER_ANTHROPIC_MESSAGES, req, capped_parts=True)
    assert [v.field for v in info.value.violations] == ["chat_request.tools[0].description"]
