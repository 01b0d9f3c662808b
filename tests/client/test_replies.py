"""entries_of_response against the shared vectors (tests/data/replies), whose shapes the SDKs prove.

The Go, Rust and TypeScript clients are tested against the same files
(clients/go/pioneer/replies_test.go, clients/rust/tests/replies.rs,
clients/ts/replies.test.mjs): what one client makes of a response, all do.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from pioneer_grpc.client import ProviderReply, ReplyError, entries_of_response
from pioneer_grpc.client.replies import as_json
from pioneer_grpc.client.reply_json import canonical_json
from pioneer_grpc.history.entry_rules import content_violations
from pioneer_grpc.v1 import history_pb2, provider_service_pb2, usage_pb2
from tests.client.reply_vectors import UnknownKeys, check_sdk_shape, load, vector_files
from tests.support import unavailable_here

TS_CLIENT = Path(__file__).resolve().parents[2] / "clients" / "ts"
FILES = vector_files()
IDS = [path.stem for path in FILES]
PROVIDERS = [name for name in provider_service_pb2.Provider.keys() if name != "PROVIDER_UNSPECIFIED"]


def _run(vector: dict[str, Any], response: Any = None) -> ProviderReply:
    return entries_of_response(
        provider_service_pb2.Provider.Value(vector["provider"]),
        vector["response"] if response is None else response,
        vector["turn_id"],
        vector["round"],
    )


def _entry(value: dict[str, Any]) -> history_pb2.ConversationEntry:
    return json_format.ParseDict(value, history_pb2.ConversationEntry())


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_the_response_has_its_sdk_type_shape(path: Path) -> None:
    vector = load(path)
    check_sdk_shape(vector["sdk_type"], vector["response"])


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_the_reply_is_what_the_vector_expects(path: Path) -> None:
    vector = load(path)
    if "error" in vector:
        with pytest.raises(ReplyError) as raised:
            _run(vector)
        assert (raised.value.code, raised.value.path) == (vector["error"]["code"], vector["error"]["path"])
        return
    expect = vector["expect"]
    reply = _run(vector)
    assert as_json(reply) == expect
    # The expectation is valid protobuf JSON, and the messages equal it byte for byte.
    wanted = [_entry(value).SerializeToString(deterministic=True) for value in expect["entries"]]
    assert [entry.SerializeToString(deterministic=True) for entry in reply.entries] == wanted
    if expect["usage"] is not None:
        usage = json_format.ParseDict(expect["usage"], usage_pb2.ProviderUsage())
        assert reply.usage is not None and reply.usage.SerializeToString() == usage.SerializeToString()


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_text_and_parsed_responses_give_oneas_json(path: Path) -> None:
    vector = load(path)
    if "error" in vector:
        return
    text = json.dumps(vector["response"])
    assert as_json(_run(vector, text)) == as_json(_run(vector, text.encode())) == vector["expect"]


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_entry_made_passes_the_append_rules(path: Path) -> None:
    vector = load(path)
    if "expect" in vector:
        entries = [_entry(value) for value in vector["expect"]["entries"]]
        assert content_violations(entries) == []
        assert all(entry.entry_id == f"{vector['turn_id']}.r{vector['round']}" for entry in entries)


def _kinds(vector: dict[str, Any]) -> set[str]:
    if "error" in vector:
        return {"error"}
    expect = vector["expect"]
    kinds = {f"stop:{expect['stop']}"}
    for entry in expect["entries"]:
        calls = entry.get("toolCalls", [])
        kinds |= {"text"} if entry.get("content") and not calls else set()
        kinds |= {"tool calls"} if calls else set()
        kinds |= {"parallel tool calls"} if len(calls) > 1 else set()
        kinds |= {"reasoning"} if entry.get("reasoningContent") else set()
    if (expect["usage"] or {}).get("cacheReadInputTokens"):
        kinds.add("cache read")
    return kinds


def test_every_provider_has_a_vector_of_each_kind() -> None:
    """Text alone, tool calls (parallel ones too), reasoning (kept, where the provider returns it), cache
    usage, a stop other than a finished turn, and an error: a provider missing one fails here."""
    found: dict[str, set[str]] = {name: set() for name in PROVIDERS}
    for path in FILES:
        vector = load(path)
        found[vector["provider"]] |= _kinds(vector)
    needed = {"text", "tool calls", "parallel tool calls", "cache read", "error"}
    finished = {"stop:end_turn", "stop:tool_use"}
    for provider, kinds in found.items():
        assert needed <= kinds, (provider, needed - kinds)
        assert {kind for kind in kinds if kind.startswith("stop:")} - finished, (provider, "no other stop")
        if provider != "PROVIDER_OPENAI_CHAT_COMPLETIONS":  # Chat Completions returns no reasoning text
            assert "reasoning" in kinds, provider
    assert Counter(load(path)["provider"] for path in FILES).keys() == set(PROVIDERS)


def test_the_sdk_check_refuses_an_unknown_key_and_a_wrong_type() -> None:
    for path in FILES:
        vector = load(path)
        unknown = {**vector["response"], "not_a_field": 1}
        with pytest.raises((UnknownKeys, ValueError)):
            check_sdk_shape(vector["sdk_type"], unknown)
    vector = load(next(p for p in FILES if p.stem == "anthropic_text"))
    wrong = copy.deepcopy(vector["response"])
    wrong["usage"]["input_tokens"] = "1843"
    with pytest.raises(ValueError):
        check_sdk_shape(vector["sdk_type"], wrong)


def test_a_retried_reply_makes_the_same_entry_and_another_round_another() -> None:
    vector = load(next(p for p in FILES if p.stem == "anthropic_parallel_tools"))
    first, again = _run(vector), _run(vector)
    assert first.entries == again.entries
    later = entries_of_response(
        provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES, vector["response"], "turn-4", 3
    )
    assert later.entries[0].entry_id == "turn-4.r3" != first.entries[0].entry_id


@pytest.mark.parametrize(
    ("provider", "turn_id", "round_number"),
    [(0, "t", 1), (99, "t", 1), (3, "", 1), (3, "t", -1), (3, "t", True)],
)
def test_the_callers_mistakes_are_invalid_argument(provider: int, turn_id: str, round_number: int) -> None:
    with pytest.raises(ReplyError) as raised:
        entries_of_response(provider, "{}", turn_id, round_number)
    assert raised.value.code == "invalid_argument"


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"a": NaN}', "null"])
def test_text_that_is_no_json_object_is_not_json(text: str) -> None:
    with pytest.raises(ReplyError) as raised:
        entries_of_response(provider_service_pb2.PROVIDER_OPENAI_RESPONSES, text, "t", 1)
    assert (raised.value.code, raised.value.path) == ("not_json", "")


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (123456789012345678901234, "1.2345678901234569e+23"),
        (5e-324, "5e-324"),
        ({"b": 1, "a": [True, None, "x\n\u0001é\u2028"]}, '{"a":[true,null,"x\\n\\u0001é\u2028"],"b":1}'),
        ({"\ue000": 1, "\U0001f600": 2, "Z": 3}, '{"Z":3,"\U0001f600":2,"\ue000":1}'),
    ],
)
def test_canonical_json_writes_as_javascript_does(value: Any, written: str) -> None:
    """RFC 8785's form: the Go, Rust and TypeScript clients write object arguments the same way."""
    assert canonical_json(value) == written


def test_the_typescript_client_answers_every_vector() -> None:
    """clients/ts/replies.js against the same vectors (node:test), and replies.d.ts type-checked by tsc.
    The Go and Rust clients run theirs in `make test-contract`."""
    node = shutil.which("node")
    if node is None or not (TS_CLIENT / "gen").is_dir() or not (TS_CLIENT / "node_modules").is_dir():
        unavailable_here("node and clients/ts/gen are needed: bash scripts/ts_client.sh (make test runs it)")
    for command in (
        [str(TS_CLIENT / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.json"],
        [str(node), "--test", "replies.test.mjs"],
    ):
        done = subprocess.run(command, cwd=TS_CLIENT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_command_prints_the_reply_and_the_error() -> None:
    vector = load(next(p for p in FILES if p.stem == "gemini_parallel_calls"))
    command = [sys.executable, "-m", "pioneer_grpc.client.reply_cli", vector["provider"], "turn-5", "2"]
    done = subprocess.run(command, input=json.dumps(vector["response"]), capture_output=True, text=True)
    assert (done.returncode, json.loads(done.stdout), done.stderr) == (0, vector["expect"], "")
    done = subprocess.run(command, input="[]", capture_output=True, text=True)
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "not_json"
    done = subprocess.run(command[:-1], input="{}", capture_output=True, text=True)
    assert done.returncode == 2 and "PROVIDER_AMAZON_BEDROCK_CONVERSE" in done.stderr


def test_the_mutations_file_holds_what_the_python_client_answers() -> None:
    """tests/data/replies/mutations.jsonl: the vectors' responses changed many ways, and the Python
    client's answers, which the Go, Rust and TypeScript tests must give too. Rewritten by
    scripts/reply_mutations.py; this fails when the Python client's answers changed since."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "reply_mutations.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    text = (FILES[0].parent / "mutations.jsonl").read_text(encoding="utf-8")
    cases = [json.loads(line) for line in text.rstrip("\n").split("\n")]  # not splitlines: U+2028 is text
    outcomes = Counter(case["error"]["code"] if "error" in case else "entries" for case in cases)
    assert len(cases) >= 300 and outcomes["entries"] >= 150, outcomes
    assert {"missing", "wrong_type", "unsupported", "bad_arguments", "error_body"} <= outcomes.keys()
