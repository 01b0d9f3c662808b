"""What a model takes, word for word: the ModelFit of a request and the notices a person reads."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from google.protobuf import json_format

from pioneer_grpc.models.registry import Takes, packaged_registry
from pioneer_grpc.providers import render
from pioneer_grpc.providers.apis import anthropic as anthropic_api
from pioneer_grpc.providers.apis import openai_chat as openai_chat_api
from pioneer_grpc.providers.conversation import Notice
from pioneer_grpc.providers.model_fit import ModelFit, apply, fit
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.conformance import conformances

P = provider_service_pb2
CHAT, ANTHROPIC = P.PROVIDER_OPENAI_CHAT_COMPLETIONS, P.PROVIDER_ANTHROPIC_MESSAGES
CHAT_SPEC, ANTHROPIC_SPEC = openai_chat_api.SPEC, anthropic_api.SPEC
USER = {"role": "CHAT_ROLE_USER", "content": "Weather in Lisbon?"}
PATH = "chat_request"


def request(model: str, **fields: Any) -> chat_pb2.ChatRequest:
    return json_format.ParseDict({"model": model, "messages": [USER], **fields}, chat_pb2.ChatRequest())


def takes(model: str) -> Takes:
    return packaged_registry().takes(model)


def test_reasoning_for_a_model_without_thinking_is_left_out() -> None:
    req = request("gpt-4.1", reasoning={"effort": "REASONING_EFFORT_HIGH"})
    found = fit(CHAT_SPEC, req, takes("gpt-4.1"), PATH)
    notice = Notice(
        "reasoning_not_sent",
        "'gpt-4.1' has no extended thinking: the reasoning settings were not sent",
        "chat_request.reasoning",
    )
    assert found == ModelFit(takes("gpt-4.1"), False, True, True, (notice,))


def test_reasoning_disabled_where_the_api_has_no_switch_for_it() -> None:
    req = request("o3", reasoning={"disabled": True})
    found = fit(CHAT_SPEC, req, takes("o3"), PATH)
    notice = Notice(
        "reasoning_not_sent",
        "openai-chat has no setting that turns reasoning off: reasoning.disabled was not sent "
        "(the model reasons as it does by default)",
        "chat_request.reasoning.disabled",
    )
    assert found == ModelFit(takes("o3"), True, True, True, (notice,))
    # Anthropic has the switch: sent, and nothing to say.
    claude = request("claude-sonnet-4-6", reasoning={"disabled": True})
    assert fit(ANTHROPIC_SPEC, claude, takes("claude-sonnet-4-6"), PATH).notices == ()


def test_a_budget_where_the_api_takes_an_effort_is_left_out() -> None:
    req = request("o3", reasoning={"budgetTokens": 5000})
    found = fit(CHAT_SPEC, req, takes("o3"), PATH)
    notice = Notice(
        "thinking_budget_not_sent",
        "openai-chat takes a reasoning effort, not a budget: budget_tokens was not sent; "
        "no reasoning setting was sent",
        "chat_request.reasoning.budget_tokens",
    )
    assert found == ModelFit(takes("o3"), True, True, False, (notice,))
    apply(found, req, [0], PATH)
    assert not req.reasoning.HasField("budget_tokens")
    both = request("o3", reasoning={"budgetTokens": 5000, "effort": "REASONING_EFFORT_LOW"})
    assert fit(CHAT_SPEC, both, takes("o3"), PATH).notices[0].message == (
        "openai-chat takes a reasoning effort, not a budget: budget_tokens was not sent; its effort was sent"
    )


def test_a_temperature_the_model_does_not_take_is_left_out() -> None:
    req = request("o3", temperature=0.4)
    found = fit(CHAT_SPEC, req, takes("o3"), PATH)
    notice = Notice(
        "temperature_not_sent", "'o3' takes no temperature: it was not sent", "chat_request.temperature"
    )
    assert found == ModelFit(takes("o3"), True, False, True, (notice,))


def test_a_model_of_another_family_names_the_families_the_api_serves() -> None:
    req = request("gpt-4.1-mini")
    assert fit(ANTHROPIC_SPEC, req, takes("gpt-4.1-mini"), PATH).notices == (
        Notice(
            "model_family_mismatch",
            "'gpt-4.1-mini' is a openai model, rendered for anthropic "
            "(which serves anthropic models) as asked",
            "chat_request.model",
        ),
    )
    several = dataclasses.replace(ANTHROPIC_SPEC, families=frozenset({"gemini", "anthropic"}))
    assert fit(several, req, takes("gpt-4.1-mini"), PATH).notices[0].message == (
        "'gpt-4.1-mini' is a openai model, rendered for anthropic "
        "(which serves anthropic, gemini models) as asked"
    )


def test_media_a_model_does_not_read_is_named_by_file_name_then_type_then_kind() -> None:
    parts = [
        {"text": "Here:"},
        {"image": {"data": "iVBORw0KGgo=", "mimeType": "image/png"}},
        {"file": {"data": "JVBERi0=", "mimeType": "application/pdf", "filename": "report.pdf"}},
    ]
    req = request("gpt-4-0613", messages=[{**USER, "contentParts": parts}])
    out = render(CHAT, req)
    body = json.loads(out.body_json)
    conformances()[CHAT].strict(body)
    assert [p.get("text") for p in body["messages"][0]["content"]] == [
        "Weather in Lisbon?",
        "Here:",
        "[image image/png not sent: gpt-4-0613 does not read image parts]",
        "[file report.pdf not sent: gpt-4-0613 does not read file parts]",
    ]
    assert [(n.code, n.message, n.field) for n in out.notices] == [
        (
            "media_not_sent",
            f"'gpt-4-0613' does not read {kind} parts: a line of text stands for it",
            f"chat_request.messages[0].content_parts[{j}].{kind}",
        )
        for j, kind in ((1, "image"), (2, "file"))
    ]


def test_media_without_a_name_or_type_is_named_by_its_kind() -> None:
    req = request("gpt-4-0613", messages=[{**USER, "contentParts": [{"image": {"data": "iVBORw0KGgo="}}]}])
    only = fit(CHAT_SPEC, req, takes("gpt-4-0613"), PATH)
    apply(only, req, [0], PATH)
    assert (
        req.messages[0].content_parts[0].text
        == "[image image not sent: gpt-4-0613 does not read image parts]"
    )
