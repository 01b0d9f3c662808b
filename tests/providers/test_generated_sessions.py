"""Generated agent sessions over every provider: SDK types, conversation rules, and a notice per difference.

A seeded generator writes SESSIONS agent sessions (PIONEER_SESSIONS_SEED picks another
run): a few turns each of a user message (sometimes with an image or a PDF, sometimes
a participant name), an assistant message calling tools with ids numbered from call_0
every turn (as local servers and open-weight models issue them), the tool results
(sometimes a screenshot or a PDF, sometimes marked as an error, sometimes missing:
an interrupted call), for models that reason and models that do not, models of
another family and models the registry does not know (the conformance's models, and
every model and tool-rule family of the registry, as written, with a dotted version, and
as Bedrock names them), with or without a compiled prompt, system messages,
temperature, reasoning settings and tool choices (none, auto, required, a named tool).

Every body must pass the provider's SDK request types and its conversation rules
(each provider's Conformance: tests/providers/conformance.py),
and every difference between the request and the body that this test can see must
be named by a notice on the field: a text or a media part missing from the body, a
call id sent as another, a temperature or reasoning setting not sent as asked, a
participant name, an error mark, a system message moved or merged, the model. A
media part is named by one notice at most.

And each model's tool rules are kept: tool choice none never leaves a callable tool in
the body; a required or named choice reaches only a model that takes one (by the
registry's facts: a [tool_rules] family that refuses it, Anthropic's extended thinking,
Converse forcing only the Claude models the registry knows), and is sent as asked to
every other. A round that cannot keep its choice is refused on `tool_choice.mode`, and
only such a round is (tools on Chat Completions for a Responses-only family: on `tools`).
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.providers import render
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.v1 import chat_pb2, provider_service_pb2
from tests.providers.cases import PDF, PNG, compiled, dynamic_text
from tests.providers.conformance import Model, conformances

P = provider_service_pb2
SESSIONS = 2000
SEED = int(os.environ.get("PIONEER_SESSIONS_SEED", "23"))
PROVIDERS = sorted(SPECS)


TOOLS = [
    {
        "name": "screenshot",
        "description": "The browser tab.",
        "parameters": {"type": "object", "properties": {}},
    },
    {
        "name": "read_file",
        "description": "A file of the workspace.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {"name": "run_tests", "description": "The test suite."},
]


@dataclass
class Session:
    provider: int
    model: Model
    request: chat_pb2.ChatRequest
    # What the generator knows the body cannot carry as asked (fields that need a notice).
    expected: set[str] = field(default_factory=set)


class Writer:
    def __init__(self, rng: random.Random, number: int) -> None:
        self.rng = rng
        self.number = number
        self.count = 0

    def token(self) -> str:
        self.count += 1
        return f"t{self.number}x{self.count}"

    def media(self, kind: str) -> dict[str, Any]:
        # Each part's bytes differ, so each can be found in the body.
        payload = (PNG if kind == "image" else PDF) + self.token().encode()
        mime = "image/png" if kind == "image" else "application/pdf"
        part: dict[str, Any] = {"mimeType": mime, "data": base64.b64encode(payload).decode()}
        if kind == "file":
            part["filename"] = f"report {self.count}.pdf"
        return {kind: part}


def _turn(w: Writer, messages: list[dict[str, Any]], turn: int, last: bool) -> None:
    rng = w.rng
    if turn and rng.random() < 0.15:
        messages.append({"role": "CHAT_ROLE_SYSTEM", "content": f"Mid-session rule {w.token()}"})
    user: dict[str, Any] = {"role": "CHAT_ROLE_USER", "content": f"Please look {w.token()}"}
    if rng.random() < 0.3:
        user["contentParts"] = [w.media(rng.choice(["image", "file"]))]
    if rng.random() < 0.1:
        user["name"] = "alice"
    messages.append(user)
    calls = rng.choice([0, 1, 1, 2, 3])
    if calls:
        text = f"Checking {w.token()}" if rng.random() < 0.5 else ""
        assistant: dict[str, Any] = {"role": "CHAT_ROLE_ASSISTANT", "content": text, "toolCalls": []}
        for j in range(calls):
            tool = rng.choice(TOOLS)
            arguments = json.dumps({"path": f"src/{w.token()}.py"}) if tool["name"] == "read_file" else "{}"
            # Numbered from call_0 every turn.
            assistant["toolCalls"].append({"id": f"call_{j}", "name": tool["name"], "arguments": arguments})
        messages.append(assistant)
        for call in assistant["toolCalls"]:
            if rng.random() < 0.08 and not last:
                continue  # interrupted: no result recorded
            messages.append(_result(w, call))
    if (not calls or rng.random() < 0.7) and not (last and calls):
        messages.append({"role": "CHAT_ROLE_ASSISTANT", "content": f"Done {w.token()}"})


def _result(w: Writer, call: dict[str, str]) -> dict[str, Any]:
    rng = w.rng
    result: dict[str, Any] = {
        "role": "CHAT_ROLE_TOOL",
        "toolCallId": call["id"],
        "content": f"output {w.token()}",
    }
    if rng.random() < 0.5:
        result["name"] = call["name"]
    if rng.random() < 0.3:
        result["contentParts"] = [w.media("image" if call["name"] == "screenshot" else "file")]
    if rng.random() < 0.15:
        result["isError"] = True
    return result


def _registry_models(provider: int) -> tuple[Model, ...]:
    """Every model and tool-rule family of the registry, named as written, with a dotted version
    (claude-sonnet-4.5) and, for Bedrock, as an inference profile and a vendor id name it."""
    registry, spec = packaged_registry(), SPECS[provider]
    names = [info.prefix for info in registry.models.values()] + list(registry.tool_rules)
    found: dict[str, Model] = {}
    for name in names:
        variants = [name, re.sub(r"(?<=\d)-(?=\d+$)", ".", name)]
        if provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE:
            variants = [f"us.anthropic.{name}-20250101-v1:0", f"anthropic.{variants[-1]}-v1:0"]
        for model in variants:
            takes = registry.takes(model)
            notice = ""
            if not takes.known:
                notice = "unknown_model"
            elif takes.family not in spec.families:
                notice = "model_family_mismatch"
            found[model] = Model(model, takes.reasoning, notice=notice)
    return tuple(found.values())


def _settings(rng: random.Random, d: dict[str, Any]) -> None:
    reasoning = rng.choice([None, None, "effort", "budget", "disabled"])
    if reasoning == "effort":
        d["reasoning"] = {"effort": rng.choice(["REASONING_EFFORT_LOW", "REASONING_EFFORT_HIGH"])}
    elif reasoning == "budget":
        d["reasoning"] = {"budgetTokens": 2048}
    elif reasoning == "disabled":
        d["reasoning"] = {"disabled": True}
    if rng.random() < 0.5:
        d["tools"] = TOOLS
        modes = ["TOOL_CHOICE_MODE_UNSPECIFIED", "TOOL_CHOICE_MODE_AUTO", "TOOL_CHOICE_MODE_NONE"]
        modes += ["TOOL_CHOICE_MODE_NONE", "TOOL_CHOICE_MODE_REQUIRED", "TOOL_CHOICE_MODE_TOOL"]
        d["toolChoice"] = {"mode": rng.choice(modes)}
        if d["toolChoice"]["mode"] == "TOOL_CHOICE_MODE_TOOL":
            d["toolChoice"]["toolName"] = rng.choice(TOOLS)["name"]
        if rng.random() < 0.2:
            d["parallelToolCalls"] = False
    if rng.random() < 0.3:
        d["temperature"] = rng.choice([0.0, 0.7, 1.25])
    if rng.random() < 0.2:
        d["maxTokens"] = rng.choice([4096, 20000])


def _session(number: int, provider: int) -> Session:
    rng = random.Random(SEED * 1_000_003 + number)
    w = Writer(rng, number)
    if rng.random() < 0.5:
        model = rng.choice(conformances()[provider].models)
    else:
        model = rng.choice(_registry_models(provider))
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.3:
        messages.append({"role": "CHAT_ROLE_SYSTEM", "content": f"Be brief. {w.token()}"})
    turns = rng.randint(1, 4)
    for turn in range(turns):
        _turn(w, messages, turn, turn == turns - 1)
    if messages[-1]["role"] == "CHAT_ROLE_ASSISTANT":
        messages.append({"role": "CHAT_ROLE_USER", "content": f"Next {w.token()}"})
    d: dict[str, Any] = {"model": model.id, "messages": messages}
    _settings(rng, d)
    request = json_format.ParseDict(d, chat_pb2.ChatRequest())
    if rng.random() < 0.3:
        request.compiled_prompt.CopyFrom(compiled(dynamic_text()))
    return Session(provider, model, request)


# --- what the body carries ------------------------------------------------------------------


def _message_differences(session: Session, text: str) -> list[str]:
    spec, request = SPECS[session.provider], session.request
    fields: list[str] = []
    started = False
    last = [m.role for m in request.messages if m.role != chat_pb2.CHAT_ROLE_SYSTEM][-1:]
    ends_with_user = last in ([chat_pb2.CHAT_ROLE_USER], [chat_pb2.CHAT_ROLE_TOOL])
    for i, message in enumerate(request.messages):
        where = f"chat_request.messages[{i}]"
        words = message.content.split()
        if words and words[-1] not in text:
            fields.append(f"{where}.content")
        for j, part in enumerate(message.content_parts):
            kind = part.WhichOneof("part")
            missing = base64.b64encode(getattr(part, kind).data).decode() not in text
            # Out of the tool message, where the API takes no media in a tool result.
            moved = message.role == chat_pb2.CHAT_ROLE_TOOL and kind not in spec.tool_result_media
            if missing or moved:
                fields.append(f"{where}.content_parts[{j}].{kind}")
        if message.name and message.role != chat_pb2.CHAT_ROLE_TOOL and not spec.participant_names:
            fields.append(f"{where}.name")
        if message.is_error and not spec.tool_result_error:
            fields.append(f"{where}.is_error")
        if message.role == chat_pb2.CHAT_ROLE_SYSTEM:
            # The dynamic half goes after a conversation that ends with the user's turn; else it
            # goes before it, and the opening system text joins it.
            merged = not started and request.HasField("compiled_prompt") and not ends_with_user
            if merged or (started and spec.system_apart):
                fields.append(where)  # merged into the compiled prompt, or moved apart
        started = started or message.role != chat_pb2.CHAT_ROLE_SYSTEM
    return fields


def _differences(session: Session, body: dict[str, Any], text: str) -> list[str]:
    """The fields whose value the body does not carry as the request has it."""
    conformance, request = conformances()[session.provider], session.request
    fields = _message_differences(session, text)
    calls = [
        (f"chat_request.messages[{i}].tool_calls[{j}].id", call.id)
        for i, message in enumerate(request.messages)
        for j, call in enumerate(message.tool_calls)
    ]
    sent = conformance.call_ids(body)
    assert len(sent) == len(calls), (sent, calls)
    fields.extend(where for (where, given), got in zip(calls, sent, strict=True) if given != got)
    if request.HasField("temperature") and not conformance.temperature_sent(body):
        fields.append("chat_request.temperature")
    reasoning = request.reasoning
    asked = reasoning.disabled or reasoning.effort or reasoning.HasField("budget_tokens")
    if asked and not conformance.reasoning_as_asked(body, reasoning):
        fields.append("chat_request.reasoning")
    if session.model.notice:
        fields.append("chat_request.model")
    return fields


FORCING = (chat_pb2.TOOL_CHOICE_MODE_REQUIRED, chat_pb2.TOOL_CHOICE_MODE_TOOL)


def _can_force(session: Session) -> bool:
    """Whether the model may be made to call a tool, by the registry's facts and the APIs' rules."""
    request, provider = session.request, session.provider
    takes = packaged_registry().takes(request.model)
    if not takes.forced_tool_choice:
        return False  # its family's [tool_rules] entry says it takes none
    reasoning = request.reasoning
    thinking = takes.reasoning and bool(reasoning.effort or reasoning.HasField("budget_tokens"))
    if provider == P.PROVIDER_ANTHROPIC_MESSAGES and thinking:
        return False  # Anthropic: only auto or none with extended thinking
    if provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE:
        # Converse forces only models that support it: a Claude model the registry knows, or a
        # model a [tool_rules] entry says takes one.
        return takes.tool_rule or (takes.known and takes.family == "anthropic")
    return True


def _refused_on(session: Session) -> str | None:
    """The field a render must refuse the session on; None: it must render."""
    request, provider = session.request, session.provider
    if not request.tools:
        return None
    takes = packaged_registry().takes(request.model)
    if provider == P.PROVIDER_OPENAI_CHAT_COMPLETIONS and not takes.chat_completions_tools:
        return "chat_request.tools"
    mode = request.tool_choice.mode
    if mode in FORCING and not _can_force(session):
        return "chat_request.tool_choice.mode"
    holds_calls = any(m.tool_calls or m.role == chat_pb2.CHAT_ROLE_TOOL for m in request.messages)
    if (
        provider == P.PROVIDER_AMAZON_BEDROCK_CONVERSE
        and mode == chat_pb2.TOOL_CHOICE_MODE_NONE
        and holds_calls
    ):
        return "chat_request.tool_choice.mode"  # its tools must be declared, and Converse has no none
    return None


def _check_tool_rules(session: Session, body: dict[str, Any]) -> None:
    conformance, request = conformances()[session.provider], session.request
    if not request.tools:
        return
    mode = request.tool_choice.mode
    if mode == chat_pb2.TOOL_CHOICE_MODE_NONE:
        assert not conformance.callable_tools(body), "tool choice none left a callable tool"
    if conformance.forced_tool(body):
        assert _can_force(session), f"a forced choice reached {request.model}, which takes none"
    if mode in FORCING:
        assert conformance.forced_tool(body), "a forced choice the model takes was not sent"


def _check(session: Session) -> None:
    refused_on = _refused_on(session)
    try:
        out = render(session.provider, session.request)  # type: ignore[arg-type]
    except InvalidArgument as refusal:
        fields = [v.field for v in refusal.violations]
        assert refused_on is not None and refused_on in fields, f"refused, and need not be: {refusal}"
        return
    assert refused_on is None, f"rendered, but {refused_on} cannot be kept for {session.request.model}"
    body = json.loads(out.body_json)
    conformance = conformances()[session.provider]
    conformance.strict(body)
    conformance.sdk_types(body, session.request.model)
    _check_tool_rules(session, body)
    noticed = [n.field for n in out.notices]
    for where in _differences(session, body, out.body_json):
        assert any(f == where or f.startswith(where + ".") for f in noticed), (
            f"{where} differs in the body and no notice names it: {[(n.code, n.field) for n in out.notices]}"
        )
    if session.model.notice:
        assert session.model.notice in {n.code for n in out.notices}
    # A media part is said once: left out (the model does not read it), or moved (it is sent).
    on_parts = Counter(n.field for n in out.notices if ".content_parts[" in n.field)
    assert [where for where, count in on_parts.items() if count > 1] == [], out.notices


def _features(session: Session) -> set[str]:
    messages = session.request.messages
    ids = [c.id for m in messages for c in m.tool_calls]
    found = {"reasoning model" if session.model.reasons else "model without reasoning"}
    mode = session.request.tool_choice.mode if session.request.tools else None
    if mode == chat_pb2.TOOL_CHOICE_MODE_NONE:
        found.add("tool choice none")
    if mode in FORCING:
        found.add("forced choice refused" if _refused_on(session) else "forced choice sent")
    if "." in session.request.model.split("-", 1)[-1] or "anthropic." in session.request.model:
        found.add("dotted or Bedrock model name")
    if session.model.notice:
        found.add(session.model.notice)
    if len(ids) != len(set(ids)):
        found.add("call id used again")
    for m in messages:
        if m.content_parts:
            found.add(
                "media in a tool result" if m.role == chat_pb2.CHAT_ROLE_TOOL else "media from the user"
            )
        if m.is_error:
            found.add("error mark")
    return found


@pytest.mark.parametrize("provider", PROVIDERS, ids=[SPECS[p].name for p in PROVIDERS])
def test_generated_sessions(provider: int) -> None:
    per_provider = SESSIONS // len(PROVIDERS)
    seen: Counter[str] = Counter()
    for number in range(per_provider):
        session = _session(number * len(PROVIDERS) + provider, provider)
        seen.update(_features(session))
        try:
            _check(session)
        except Exception as exc:
            request = json_format.MessageToJson(session.request)
            raise AssertionError(
                f"session {number} (seed {SEED}) for {SPECS[provider].name}: {exc}\n{request}"
            ) from exc
    # The generator writes what the test is about, in every run.
    wanted = {"reasoning model", "model without reasoning", "unknown_model", "call id used again"}
    wanted |= {"media in a tool result", "media from the user", "error mark"}
    wanted |= {"tool choice none", "forced choice sent", "dotted or Bedrock model name"}
    assert {feature for feature in wanted if seen[feature] >= 20} == wanted, seen
    assert seen["forced choice refused"] >= 5, seen  # the few families that take none, and thinking
