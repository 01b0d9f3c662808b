"""Tool-heavy agent turns for compaction tests: a request naming a file, a read_file call,
its (long) output, and an answer that records a decision."""

from __future__ import annotations

import json

from pioneer_grpc.v1 import history_pb2
from tests.history.rpc import ASSISTANT, TOOL, entry, tool_call


def path(i: int) -> str:
    return f"src/module_{i}/handler_{i}.py"


def request_text(i: int) -> str:
    return f"Please look at {path(i)} and make parse_{i} handle empty input; it is request number {i}."


def decision_text(i: int) -> str:
    return f"We decided to guard parse_{i} with an early return because callers pass None (turn {i})."


def code_output(i: int, lines: int) -> str:
    return "\n".join(
        f"def helper_{i}_{j}(value):\n    return transform_{j % 7}(value) + {i * 31 + j}"
        for j in range(lines)
    )


def tool_turn(i: int, lines: int = 40, prefix: str = "") -> list[history_pb2.ConversationEntry]:
    turn = f"{prefix}turn-{i}"
    call = f"{prefix}call-{i}"
    return [
        entry(f"{prefix}u{i}", turn, content=request_text(i)),
        entry(
            f"{prefix}a{i}",
            turn,
            ASSISTANT,
            content=f"Reading {path(i)}.",
            tool_calls=[tool_call(call, "read_file", json.dumps({"path": path(i)}))],
        ),
        entry(
            f"{prefix}r{i}", turn, TOOL, content=code_output(i, lines), tool_call_id=call, name="read_file"
        ),
        entry(f"{prefix}f{i}", turn, ASSISTANT, content=decision_text(i)),
    ]
