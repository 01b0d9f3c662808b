"""Writes tests/data/replies/mutations.jsonl: the vectors' responses, each changed a few ways, and
what the Python client makes of every one.

The vectors (tests/data/replies/*.json) say by hand what each response must become. These lines
say what the Python client makes of responses no one wrote by hand: a key dropped, a value null or
of another type, blank or unusual text, a kind of content no client knows, numbers written other
ways, an element repeated, other tool call arguments. The Go, Rust and TypeScript tests read them
and must answer the same (entries and usage as protobuf bytes, stop reasons, not kept paths, or the
error's code and path): four clients that agree on all of them map responses alike.

    .venv/bin/python scripts/reply_mutations.py          # rewrite the file
    .venv/bin/python scripts/reply_mutations.py --check  # exit 1 when it differs from what this makes

tests/client/test_replies.py runs the check: a change of the Python client's answers shows there,
and, once the file is rewritten, in the other clients' tests until they answer alike.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pioneer_grpc.client import ReplyError, entries_of_response
from pioneer_grpc.client.replies import as_json
from pioneer_grpc.v1 import provider_service_pb2

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "data" / "replies"
OUT = VECTORS / "mutations.jsonl"

Place = tuple[Any, Any]  # (a dict or a list, a key or an index in it)


def _places(value: Any, found: list[Place]) -> list[Place]:
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found.append((value, key))
        _places(item, found)
    return found


def _pick(response: dict[str, Any], rng: random.Random, keep: Callable[[Any, Any], bool]) -> Place | None:
    places = [(c, k) for c, k in _places(response, []) if keep(c, k)]
    return rng.choice(places) if places else None


def _drop(response: dict[str, Any], rng: random.Random) -> None:
    place = _pick(response, rng, lambda c, k: isinstance(c, dict))
    if place:
        del place[0][place[1]]


def _null(response: dict[str, Any], rng: random.Random) -> None:
    place = _pick(response, rng, lambda c, k: isinstance(c, dict))
    if place:
        place[0][place[1]] = None


OTHER_TYPES = [0, 1.5, "x", [], {}, True]


def _retype(response: dict[str, Any], rng: random.Random) -> None:
    place = _pick(response, rng, lambda c, k: True)
    if place:
        old = place[0][place[1]]
        place[0][place[1]] = rng.choice([v for v in OTHER_TYPES if type(v) is not type(old)])


def _blank(response: dict[str, Any], rng: random.Random) -> None:
    place = _pick(response, rng, lambda c, k: isinstance(c[k], str))
    if place:
        place[0][place[1]] = rng.choice(["", " ", "\n\t\r ", "  x  ", "\u00a0"])


def _novel_kind(response: dict[str, Any], rng: random.Random) -> None:
    place = _pick(
        response, rng, lambda c, k: isinstance(c[k], list) and any(isinstance(i, dict) for i in c[k])
    )
    if place:
        items = place[0][place[1]]
        novel = copy.deepcopy(rng.choice([i for i in items if isinstance(i, dict)]))
        if "type" in novel:
            novel["type"] = "novel_kind"
        else:
            novel = {"novelKind": {"value": 1}, **({"zz": None} if rng.random() < 0.5 else {})}
        items.insert(rng.randrange(len(items) + 1), novel)


NUMBERS = [12.0, -3, 2**31, 2**31 - 1, 2**53 + 1, 0.1 + 0.2, 1e21, 1.5e-7, 123456789012345678901234]


def _number(response: dict[str, Any], rng: random.Random) -> None:
    place = _pick(response, rng, lambda c, k: isinstance(c[k], int | float) and not isinstance(c[k], bool))
    if place:
        place[0][place[1]] = rng.choice(NUMBERS)


TEXTS = ['é\u2028😀\u0007"\\', "\x00\x1f", "line\nbreak", "\ue000 \U0001f600", "{}", '{"a": 1}']


def _text(response: dict[str, Any], rng: random.Random) -> None:
    place = _pick(response, rng, lambda c, k: isinstance(c[k], str))
    if place:
        place[0][place[1]] = rng.choice(TEXTS)


def _repeat(response: dict[str, Any], rng: random.Random) -> None:
    place = _pick(response, rng, lambda c, k: isinstance(c[k], list) and c[k])
    if place:
        items = place[0][place[1]]
        items.insert(rng.randrange(len(items) + 1), copy.deepcopy(rng.choice(items)))


ARGUMENT_KEYS = ["input", "args", "arguments"]


def _arguments_value(rng: random.Random) -> Any:
    return rng.choice(
        [
            {
                "b": [1.0, 2.5e-8, 1e21, -0.0, None],
                "a": {"z": True, "é": "\u2028"},
                "\ue000": 1,
                "😀": 2,
                "A": 0.1,
            },
            {"deep": {"er": {"est": [[[{"x": 123456789012345678901234}]]]}}},
            {},
            [1, 2],
            "text",
        ]
    )


def _arguments(response: dict[str, Any], rng: random.Random) -> None:
    place = _pick(response, rng, lambda c, k: isinstance(c, dict) and k in ARGUMENT_KEYS)
    if place is None:
        return _text(response, rng)
    container, key = place
    value = _arguments_value(rng)
    if isinstance(container[key], str):  # OpenAI's arguments are JSON text
        value = rng.choice([json.dumps(value), json.dumps(value, indent=1), "{not json", " "])
    container[key] = value
    return None


MUTATIONS = [_drop, _null, _retype, _blank, _novel_kind, _number, _text, _repeat, _arguments]


def _answer(vector: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    provider = provider_service_pb2.Provider.Value(vector["provider"])
    try:
        reply = entries_of_response(provider, json.dumps(response), vector["turn_id"], vector["round"])
    except ReplyError as exc:
        return {"error": {"code": exc.code, "path": exc.path}}
    return {"expect": as_json(reply)}


def lines() -> list[str]:
    out = []
    for path in sorted(VECTORS.glob("*.json")):
        vector = json.loads(path.read_text(encoding="utf-8"))
        rng = random.Random(path.stem)
        for i, mutate in enumerate(MUTATIONS):
            response = copy.deepcopy(vector["response"])
            mutate(response, rng)
            case = {"name": f"{path.stem}~{i}{mutate.__name__}", "provider": vector["provider"]}
            case |= {"turn_id": vector["turn_id"], "round": vector["round"], "response": response}
            case |= _answer(vector, response)
            out.append(json.dumps(case, ensure_ascii=False, separators=(",", ":")))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs")
    text = "\n".join(lines()) + "\n"
    if parser.parse_args().check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(ROOT)} differs: run scripts/reply_mutations.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"{OUT.relative_to(ROOT)}: {text.count(chr(10))} responses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
