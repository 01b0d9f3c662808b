"""What an append refuses because every later round would fail with it.

A stored entry is sent on every later round until a summary covers it, so an
entry that a provider rejects poisons the thread. Two kinds of rules:

- `content_violations`: the entry alone (no text, tool calls or artifacts; tool
  call arguments that are not a JSON object every provider accepts:
  `tool_arguments.py`). Checked before any work.
- `call_violations`: the tool calls against the thread: a call id unique among
  the calls still open in its turn (those of one assistant entry: ids may repeat
  across entries and turns, as models number their calls), a tool result answers
  an open call of its own turn (made by the turn's latest assistant entry,
  before any later user or assistant entry), once, under the call's tool name.
  Checked inside the append transaction, against what the store holds
  (`StoredCalls`).

Size caps live in `entries.py`; these are the semantic rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pioneer_grpc.errors import FieldViolation
from pioneer_grpc.history.tool_arguments import arguments_problem
from pioneer_grpc.v1 import history_pb2

TOOL = history_pb2.ENTRY_ROLE_TOOL
ASSISTANT = history_pb2.ENTRY_ROLE_ASSISTANT


def is_empty(entry: history_pb2.ConversationEntry) -> bool:
    """No text, tool calls, artifacts or parts. A tool result may be empty (the tool printed nothing)."""
    return (
        entry.role != TOOL
        and not entry.content.strip()
        and not entry.tool_calls
        and not entry.artifact_refs
        and not entry.content_parts
    )


def content_violations(
    entries: Sequence[history_pb2.ConversationEntry], prefix: str = "entries"
) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    for i, entry in enumerate(entries):
        path = f"{prefix}[{i}]"
        if is_empty(entry):
            violations.append(
                FieldViolation(
                    f"{path}.content", "the entry is empty: it needs content, tool calls or artifact refs"
                )
            )
        for j, call in enumerate(entry.tool_calls):
            problem = arguments_problem(call.arguments)
            if problem is not None:
                violations.append(FieldViolation(f"{path}.tool_calls[{j}].arguments", problem))
    return violations


@dataclass
class StoredCalls:
    """What the store holds that the batch's tool calls and results are checked against."""

    # Every stored entry of the batch's turns, oldest first, by turn id.
    turns: dict[str, list[history_pb2.ConversationEntry]] = field(default_factory=dict)
    # Call id -> a stored entry that made it, for the call ids the batch names.
    thread_calls: dict[str, str] = field(default_factory=dict)
    # Batch entry ids already stored (repeats: checked when they were first appended).
    stored_entry_ids: set[str] = field(default_factory=set)


@dataclass
class _TurnState:
    # Calls of the turn's latest assistant entry, while only tool results followed it: id -> tool name.
    open: dict[str, str] = field(default_factory=dict)
    # Call id -> the entry that answered it.
    answered: dict[str, str] = field(default_factory=dict)

    def step(self, entry: history_pb2.ConversationEntry) -> None:
        if entry.role == TOOL:
            self.answered.setdefault(entry.tool_call_id, entry.entry_id)
        elif entry.role == ASSISTANT and entry.tool_calls:
            self.open = {call.id: call.name for call in entry.tool_calls}
            self.answered = {}
        else:
            self.open = {}
            self.answered = {}


def _result_violation(
    entry: history_pb2.ConversationEntry, path: str, state: _TurnState, made: dict[str, str]
) -> FieldViolation | None:
    call_id = entry.tool_call_id
    if call_id in state.open:
        if call_id in state.answered:
            return FieldViolation(
                f"{path}.tool_call_id",
                f"call {call_id!r} is already answered by entry {state.answered[call_id]!r}",
            )
        expected = state.open[call_id]
        if entry.name and entry.name != expected:
            return FieldViolation(
                f"{path}.name", f"call {call_id!r} is to tool {expected!r}, not {entry.name!r}"
            )
        return None
    if call_id in made:
        return FieldViolation(
            f"{path}.tool_call_id",
            f"call {call_id!r} (entry {made[call_id]!r}) is not open: a result follows its call in the same "
            "turn, before the turn's next user or assistant entry",
        )
    return FieldViolation(f"{path}.tool_call_id", f"no call with id {call_id!r} was made in this thread")


def _repeated_ids(entry: history_pb2.ConversationEntry, path: str) -> list[FieldViolation]:
    """Calls of one entry are open together: their ids must differ (a result could not tell them apart)."""
    first: dict[str, int] = {}
    found = []
    for j, call in enumerate(entry.tool_calls):
        if call.id in first:
            found.append(
                FieldViolation(
                    f"{path}.tool_calls[{j}].id",
                    f"call id {call.id!r} is already used by tool_calls[{first[call.id]}] of this entry: "
                    "the calls open together need distinct ids",
                )
            )
        else:
            first[call.id] = j
    return found


def call_violations(
    entries: Sequence[history_pb2.ConversationEntry], stored: StoredCalls, prefix: str = "entries"
) -> list[FieldViolation]:
    """Every tool call and result of the batch checked against the stored turns and thread calls."""
    states: dict[str, _TurnState] = {}
    for turn_id, turn in stored.turns.items():
        state = states.setdefault(turn_id, _TurnState())
        for entry in turn:
            state.step(entry)
    made = dict(stored.thread_calls)
    violations: list[FieldViolation] = []
    for i, entry in enumerate(entries):
        if entry.entry_id in stored.stored_entry_ids:
            continue
        path = f"{prefix}[{i}]"
        state = states.setdefault(entry.turn_id, _TurnState())
        if entry.role == TOOL:
            found = _result_violation(entry, path, state, made)
            if found is not None:
                violations.append(found)
                continue
        violations.extend(_repeated_ids(entry, path))
        for call in entry.tool_calls:
            made[call.id] = entry.entry_id
        state.step(entry)
    return violations


def named_call_ids(entries: Sequence[history_pb2.ConversationEntry]) -> list[str]:
    """Every call id the batch makes or answers (what `StoredCalls.thread_calls` must cover)."""
    ids = [call.id for entry in entries for call in entry.tool_calls]
    ids += [entry.tool_call_id for entry in entries if entry.role == TOOL]
    return list(dict.fromkeys(i for i in ids if i))
