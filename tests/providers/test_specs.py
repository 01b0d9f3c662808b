"""Every Provider enum value has a spec or is refused, and the spec is what the server uses."""

from __future__ import annotations

import pytest

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import render
from pioneer_grpc.providers.specs import BY_NAME, REFUSED, SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

P = provider_service_pb2


def test_every_provider_value_is_specified_or_refused() -> None:
    values = set(P.Provider.values())
    assert set(SPECS) | set(REFUSED) == values
    assert not set(SPECS) & set(REFUSED)
    for value, spec in SPECS.items():
        assert spec.provider == value
    assert len(BY_NAME) == len(SPECS)


@pytest.mark.parametrize("provider", [*REFUSED, 999])
def test_a_refused_or_unknown_provider_is_named_and_never_rendered(provider: int) -> None:
    request = chat_pb2.ChatRequest(
        model="gpt-5", messages=[chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="hi")]
    )
    with pytest.raises(InvalidArgument) as info:
        render(provider, request)  # type: ignore[arg-type]
    assert [v.field for v in info.value.violations] == ["provider"]


@pytest.mark.parametrize("name", list(BY_NAME))
def test_each_spec_renders_a_plain_request_to_its_path(name: str) -> None:
    spec = BY_NAME[name]
    family = sorted(spec.families)[0]
    model = {"openai": "gpt-5", "anthropic": "claude-sonnet-4-6", "gemini": "gemini-2.5-flash"}.get(
        family, "m"
    )
    request = chat_pb2.ChatRequest(
        model=model, messages=[chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="hi")]
    )
    rendered = render(spec.provider, request)
    assert rendered.path == spec.path(model)
    assert rendered.body_json.startswith("{")
