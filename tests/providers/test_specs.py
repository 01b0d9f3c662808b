"""Every Provider enum value has a spec or is refused, and the spec is what the server uses."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.providers import apis, render
from pioneer_grpc.providers.specs import BY_NAME, REFUSED, SPECS, specs_in
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import MODELS
from tests.providers.conformance import conformances

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
    model = MODELS[spec.provider]
    request = chat_pb2.ChatRequest(
        model=model, messages=[chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="hi")]
    )
    rendered = render(spec.provider, request)
    assert rendered.path == spec.path(model)
    assert rendered.body_json.startswith("{")


def test_every_provider_has_what_the_tests_over_every_provider_need() -> None:
    assert set(conformances()) == set(SPECS)
    for provider, conformance in conformances().items():
        assert conformance.provider == provider
        assert conformance.models


def _package(root: Path, name: str, modules: dict[str, str]) -> ModuleType:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module, text in modules.items():
        (package / f"{module}.py").write_text(text)
    return importlib.import_module(name)


SPEC_OF = """
from dataclasses import replace
from pioneer_grpc.providers.specs import BY_NAME
SPEC = replace(BY_NAME["gemini"], provider={provider}, name="{name}")
"""


def test_a_module_in_the_package_is_a_provider_with_no_list_edited(tmp_path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    package = _package(tmp_path, "more_apis", {"echo": SPEC_OF.format(provider=99, name="echo")})
    assert {p: s.name for p, s in specs_in(package).items()} == {99: "echo"}
    # The server's own package holds exactly the specs the server uses.
    assert specs_in(apis) == dict(SPECS)


def test_a_module_without_a_spec_or_a_provider_twice_is_an_error(tmp_path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    bare = _package(tmp_path, "bare_apis", {"helpers": "X = 1\n"})
    with pytest.raises(TypeError, match=r"bare_apis\.helpers declares no SPEC"):
        specs_in(bare)
    twice = SPEC_OF.format(provider=98, name="twice")
    doubled = _package(tmp_path, "doubled_apis", {"a": twice, "b": twice})
    with pytest.raises(ValueError, match="both specify provider 98"):
        specs_in(doubled)
