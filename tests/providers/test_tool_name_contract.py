"""The contract's comment on ToolDefinition.name states each provider's tool-name rule as the code applies
it (the characters and the length of providers/apis/*.py SPEC), so the two cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

from pioneer_grpc.providers.specs import SPECS

CHAT_PROTO = Path(__file__).resolve().parents[2] / "protos" / "pioneer" / "v1" / "chat.proto"
# "openai-chat, bedrock-converse: [A-Za-z0-9_-], at most 64 characters" (words may sit between).
RULE = re.compile(r"((?:[a-z-]+, )*[a-z-]+): \[([^\]]+)\][^;]*?at most (\d+) characters")


def _name_comment() -> str:
    text = CHAT_PROTO.read_text()
    body = text[text.index("message ToolDefinition {") :]
    lines = body[: body.index("string name = 1")].splitlines()[1:]
    return " ".join(line.strip().removeprefix("//").strip() for line in lines)


def test_the_contract_states_each_providers_tool_name_rule_as_the_code_applies_it():
    stated: dict[str, tuple[str, int]] = {}
    for names, chars, most in RULE.findall(_name_comment()):
        for name in names.split(", "):
            assert name not in stated, f"{name} is stated twice"
            stated[name] = (chars, int(most))
    assert stated == {spec.name: (spec.tool_name_chars, spec.max_tool_name_chars) for spec in SPECS.values()}


def test_the_gemini_limit_cites_its_source():
    comment = _name_comment()
    assert "FunctionDeclaration.name" in comment
