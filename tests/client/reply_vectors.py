"""The shared reply vectors (tests/data/replies/*.json) and the SDK types that prove their shape.

Each vector is one provider response of real shape and what every client's
`entries_of_response` must make of it: `expect` (entries and usage in protobuf
JSON, the stop, the refusal, what is not kept) or `error` (code and path). The
Python, Go, Rust and TypeScript tests all read these files.

`sdk_type` names the official SDK type the response is checked against, with
unknown keys refused: a pydantic model of the anthropic, openai or google-genai
SDK, the ConverseResponseTypeDef of mypy-boto3-bedrock-runtime, or an error
shape of botocore's bedrock-runtime service model.
"""

from __future__ import annotations

import importlib
import json
import sys
import typing
from functools import cache
from pathlib import Path
from typing import Any

import typing_extensions
from pydantic import BaseModel, ConfigDict, TypeAdapter

VECTORS = Path(__file__).resolve().parents[1] / "data" / "replies"


def vector_files() -> list[Path]:
    return sorted(VECTORS.glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return value


class UnknownKeys(AssertionError):
    pass


def _unknown_keys(value: Any, path: str = "") -> list[str]:
    """Keys an SDK model kept as extras (the anthropic and openai models allow them): unknown to the SDK."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{path}.{key}" for key in value.model_extra or {}]
        for name in type(value).model_fields:
            found += _unknown_keys(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found += _unknown_keys(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _unknown_keys(item, f"{path}.{key}")
    return found


def _forbid_extra(prefix: str) -> None:
    for name, module in list(sys.modules.items()):
        if name.startswith(prefix):
            for value in list(vars(module).values()):
                if typing_extensions.is_typeddict(value) and "__pydantic_config__" not in value.__dict__:
                    value.__pydantic_config__ = ConfigDict(extra="forbid")


@cache
def _converse_adapter() -> TypeAdapter[Any]:
    """ConverseResponseTypeDef as the HTTP body holds it: boto3's ResponseMetadata is not in the body, and
    the keys a response may leave out (trace, performanceConfig, ...) are optional; output, stopReason,
    usage and metrics are required."""
    from mypy_boto3_bedrock_runtime import type_defs

    _forbid_extra("mypy_boto3_bedrock_runtime")
    hints = typing.get_type_hints(type_defs.ConverseResponseTypeDef)
    required = {"output", "stopReason", "usage", "metrics"}
    fields = {
        key: (typing_extensions.Required[hint] if key in required else typing_extensions.NotRequired[hint])
        for key, hint in hints.items()
        if key != "ResponseMetadata"
    }
    body = typing_extensions.TypedDict("ConverseResponseBody", fields)  # type: ignore[operator]
    body.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
    return TypeAdapter(body)


def _botocore_error(shape_name: str, response: dict[str, Any]) -> None:
    import botocore.session

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.shape_for(shape_name)
    assert shape.metadata.get("exception"), f"{shape_name} is not an error shape"
    unknown = set(response) - set(shape.members)
    if unknown:
        raise UnknownKeys(f"{shape_name} has no {sorted(unknown)}")
    for key, value in response.items():
        assert shape.members[key].type_name == "string" and isinstance(value, str), key


def check_sdk_shape(sdk_type: str, response: dict[str, Any]) -> None:
    """Raises when the named SDK type refuses the response (a wrong type, a missing or unknown key)."""
    text = json.dumps(response)
    if sdk_type.startswith("botocore:bedrock-runtime:"):
        _botocore_error(sdk_type.rsplit(":", 1)[1], response)
        return
    if sdk_type == "mypy_boto3_bedrock_runtime.type_defs.ConverseResponseTypeDef":
        _converse_adapter().validate_json(text)
        return
    module_name, _, name = sdk_type.rpartition(".")
    model = getattr(importlib.import_module(module_name), name)
    if sdk_type.startswith("google.genai."):
        model.model_validate_json(text)  # google-genai's models forbid unknown keys themselves
        return
    parsed = model.model_validate_json(text, strict=True)
    unknown = _unknown_keys(parsed)
    if unknown:
        raise UnknownKeys(f"{sdk_type} does not know {unknown}")
