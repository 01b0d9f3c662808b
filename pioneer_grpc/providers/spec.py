"""What the server knows about one provider API, in one value: `ProviderSpec`.

Each module of providers/apis/ renders one API and ends with its SPEC;
providers/specs.py finds them.
Everything that differs by provider (the renderer, the rules, the path, the
limits, the names the CLI and the telemetry use) is read from the spec, never
from a table keyed by the Provider enum.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.providers.common import JSON, TOOL_ERROR_LINE, Prepared
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2

if TYPE_CHECKING:
    from pioneer_grpc.providers.provider_rules import Adapted

# [A-Za-z0-9_-]: what OpenAI and Anthropic take as tool names and call ids.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]+")

Adapter = Callable[["Adapted", list[int], str], None]
# (request, path, whether the model thinks at all) -> violations
RequestRule = Callable[[chat_pb2.ChatRequest, str, bool], list[FieldViolation]]


def _concatenated(prefix: Sequence[Any], own: list[Any]) -> list[Any]:
    return [*prefix, *own]


@dataclass(frozen=True)
class ProviderSpec:
    provider: provider_service_pb2.Provider
    # The CLI's --provider word and the docs' name; the GenAI semantic conventions'
    # gen_ai.provider.name (telemetry).
    name: str
    telemetry_name: str
    # The registry `provider` values (model families) this API serves; a model of
    # another family is rendered with a notice.
    families: frozenset[str]
    render: Callable[[Prepared], tuple[JSON, int]]
    path: Callable[[str], str]
    # Tool names: the characters they may hold (a regex class body) and their length
    # (the original's policy: 64, or 128 where the API allows it).
    tool_name_chars: str = "A-Za-z0-9_-"
    max_tool_name_chars: int = 64
    # The request's own messages alone, for a prefix rendered once (providers/prefix.py);
    # None: the whole conversation is rendered every time.
    render_messages: Callable[[Prepared], list[Any]] | None = None
    # A prefix's rendered messages followed by those of the messages after it (which start
    # with a user message) as the whole conversation renders them; the prefix's are shared
    # by rounds and never changed.
    join_rendered: Callable[[Sequence[Any], list[Any]], list[Any]] = _concatenated
    # The first non-system message must be a user message.
    user_first: bool = False
    # System text goes apart from the messages (a top-level field).
    system_apart: bool = False
    # Tool call arguments go as a JSON object, not as text.
    parsed_arguments: bool = False
    # Call ids must be unique in the conversation (a reused id is rewritten, with a notice),
    # and the pattern they must match (others are rewritten); None: any id.
    unique_call_ids: bool = True
    call_id: re.Pattern[str] | None = None
    max_call_id_chars: int | None = None
    # Rules on the request's own fields (a violation each), and the adaptations:
    # `adapt` on the whole request, `adapt_messages` the part of it that goes
    # message by message and looks at nothing else (what a prefix gets once).
    request_rules: RequestRule | None = None
    adapt: Adapter | None = None
    adapt_messages: Adapter | None = None
    # Whether the API forces a tool call (a required or named tool choice) only for the models that
    # support it (Converse): a forced choice then needs the registry to say the model takes it.
    forced_choice_per_model: bool = False
    # Whether the API takes a thinking budget in tokens (else an effort level), and the
    # smallest budget it takes, which must stay below max_tokens (None: no such rule).
    thinking_budget: bool = False
    min_thinking_budget: int | None = None
    # A tool result must name its tool (set, or found on the call it answers).
    result_needs_name: bool = False
    # What a model id must look like (it goes in the path); None: anything.
    model_id: re.Pattern[str] | None = None
    # Media kinds the API takes inside a tool result; others the model reads go in a user message
    # after the results of the call's turn (the renderer's to place, or to refuse), with a notice.
    tool_result_media: frozenset[str] = field(default_factory=frozenset)
    # Whether messages carry a participant `name` (OpenAI Chat Completions).
    participant_names: bool = False
    # Whether a tool result may say it is an error (Anthropic is_error, Bedrock status).
    tool_result_error: bool = False
    # Without such a field: how the mark goes in the result itself (the tool_error_in_content notice).
    tool_error_in_content: str = f"the result's text starts with a line {TOOL_ERROR_LINE!r}"

    @property
    def tool_name(self) -> re.Pattern[str]:
        return re.compile(f"[{self.tool_name_chars}]+")
