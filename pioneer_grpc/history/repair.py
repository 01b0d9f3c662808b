"""Repair at load: what older versions stored and a provider would reject never leaves a load.

Appends refuse these now (`entry_rules.py`), but threads stored before keep
them. A load walks the entries in order and, each time with a diagnostic:

- a tool call whose turn moved on without its result (the loop crashed, was
  cancelled, timed out) gets a synthesized result saying none was recorded;
- an empty entry, an assistant entry whose calls are invalid (arguments not a
  JSON object, no id or name) or repeat an id among its own calls (ids may
  repeat across entries and turns: only calls open together must differ), a
  second result for one call, and a result whose call is not right before it
  are skipped;
- a result naming another tool than its call is sent under the call's name;
- tool call arguments a provider would refuse but that are a JSON object
  (`NaN`, `1e999`, a lone surrogate escape...) are sent with each such number as
  null and each lone surrogate as U+FFFD (`tool_arguments.py`).

Entries keep their order; a synthesized result follows its call's other results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pioneer_grpc.history import diagnostics as codes
from pioneer_grpc.history.diagnostics import diagnostic
from pioneer_grpc.history.entry_rules import is_empty
from pioneer_grpc.history.tool_arguments import arguments_problem, repaired_arguments
from pioneer_grpc.v1 import history_pb2

TOOL = history_pb2.ENTRY_ROLE_TOOL
ASSISTANT = history_pb2.ENTRY_ROLE_ASSISTANT

INTERRUPTED_RESULT = (
    "No result was recorded for this tool call: it was interrupted before its result was stored. "
    "Call the tool again if its result is still needed."
)
# cl100k_base tokens of INTERRUPTED_RESULT (a test checks it): a load never re-tokenizes.
INTERRUPTED_RESULT_TOKENS = 29


@dataclass
class Repaired:
    entries: list[history_pb2.ConversationEntry] = field(default_factory=list)
    diagnostics: list[history_pb2.HistoryDiagnostic] = field(default_factory=list)
    # With `close_at_end=False`: the calls still waiting for a result at the end, id -> their entry.
    pending: dict[str, history_pb2.ConversationEntry] = field(default_factory=dict)


def interrupted_result(
    call_entry: history_pb2.ConversationEntry, call_id: str, name: str
) -> history_pb2.ConversationEntry:
    """A tool result standing in for one that was never stored. It has no entry_id: it is not stored."""
    return history_pb2.ConversationEntry(
        turn_id=call_entry.turn_id,
        role=TOOL,
        content=INTERRUPTED_RESULT,
        tool_call_id=call_id,
        name=name,
        sequence=call_entry.sequence,
        token_count=INTERRUPTED_RESULT_TOKENS,
        completed=call_entry.completed,
    )


def _call_problem(entry: history_pb2.ConversationEntry) -> tuple[str, str] | None:
    """(code, why) when the assistant entry's calls cannot be sent."""
    ids: set[str] = set()
    for call in entry.tool_calls:
        if not call.id or not call.name:
            return codes.INVALID_TOOL_CALL_SKIPPED, "a tool call has no id or no name"
        problem = arguments_problem(call.arguments)
        if problem is not None:
            return codes.INVALID_TOOL_CALL_SKIPPED, f"call {call.id!r}: {problem}"
        if call.id in ids:
            return codes.DUPLICATE_TOOL_CALL_SKIPPED, f"call id {call.id!r} is used twice by the entry"
        ids.add(call.id)
    return None


def _with_arguments_repaired(
    entry: history_pb2.ConversationEntry,
) -> tuple[history_pb2.ConversationEntry, list[str]]:
    """The entry with every call's arguments that a provider would refuse repaired where they can be,
    and a note per repaired call; the entry itself when there is nothing to repair."""
    notes: list[str] = []
    fixed: history_pb2.ConversationEntry | None = None
    for j, call in enumerate(entry.tool_calls):
        if arguments_problem(call.arguments) is None:
            continue
        repaired = repaired_arguments(call.arguments)
        if repaired is None:
            continue  # not a JSON object at all: the call is skipped (`_call_problem`)
        if fixed is None:
            fixed = history_pb2.ConversationEntry()
            fixed.CopyFrom(entry)
        fixed.tool_calls[j].arguments = repaired[0]
        notes.append(f"call {call.id!r}: {', '.join(dict.fromkeys(repaired[1]))}")
    return (entry if fixed is None else fixed), notes


class _Walk:
    def __init__(self) -> None:
        self.out = Repaired()
        # The latest assistant entry's calls while only their results followed: id -> (name, entry).
        self.open: dict[str, tuple[str, history_pb2.ConversationEntry]] = {}
        self.answered: set[str] = set()

    def note(self, code: str, message: str, entry: history_pb2.ConversationEntry) -> None:
        self.out.diagnostics.append(diagnostic(code, message, entry.entry_id))

    def close(self) -> None:
        for call_id, (name, call_entry) in self.open.items():
            if call_id in self.answered:
                continue
            self.out.entries.append(interrupted_result(call_entry, call_id, name))
            self.note(
                codes.TOOL_RESULT_MISSING,
                f"call {call_id!r} ({name}) has no stored result; sent a result saying it was interrupted",
                call_entry,
            )
        self.open, self.answered = {}, set()

    def result(self, entry: history_pb2.ConversationEntry) -> None:
        call_id = entry.tool_call_id
        if call_id not in self.open:
            self.note(
                codes.ORPHAN_TOOL_RESULT_DROPPED,
                f"tool result for call {call_id!r} does not follow its call; not sent",
                entry,
            )
            return
        if call_id in self.answered:
            self.note(
                codes.DUPLICATE_TOOL_RESULT_SKIPPED, f"call {call_id!r} was already answered; not sent", entry
            )
            return
        name = self.open[call_id][0]
        if entry.name and entry.name != name:
            self.note(
                codes.TOOL_RESULT_NAME_REPAIRED,
                f"result names tool {entry.name!r} but call {call_id!r} is to {name!r}; sent as {name!r}",
                entry,
            )
            fixed = history_pb2.ConversationEntry()
            fixed.CopyFrom(entry)
            fixed.name = name
            entry = fixed
        self.answered.add(call_id)
        self.out.entries.append(entry)

    def other(self, entry: history_pb2.ConversationEntry) -> None:
        if is_empty(entry):
            self.note(
                codes.EMPTY_ENTRY_SKIPPED, "entry has no content, tool calls or artifacts; not sent", entry
            )
            return
        self.close()
        if entry.role == ASSISTANT and entry.tool_calls:
            entry, notes = _with_arguments_repaired(entry)
            if notes:
                self.note(
                    codes.TOOL_ARGUMENTS_REPAIRED,
                    f"{'; '.join(notes)}: not accepted by every provider's JSON; sent as null "
                    "(numbers) or U+FFFD (lone surrogates)",
                    entry,
                )
            problem = _call_problem(entry)
            if problem is not None:
                code, why = problem
                self.note(code, f"{why}; the assistant entry and its results are not sent", entry)
                return
            self.open = {call.id: (call.name, entry) for call in entry.tool_calls}
        self.out.entries.append(entry)


def repair(entries: Sequence[history_pb2.ConversationEntry], close_at_end: bool = True) -> Repaired:
    """The entries a provider accepts, with a diagnostic per repair.

    `close_at_end=False` leaves the last assistant entry's unanswered calls
    open (a turn in progress may still be running them) and returns them as
    `pending`; every earlier unanswered call is closed with a synthesized result.
    """
    walk = _Walk()
    for entry in entries:
        if entry.role == TOOL:
            walk.result(entry)
        else:
            walk.other(entry)
    if close_at_end:
        walk.close()
    else:
        walk.out.pending = {
            call_id: call_entry
            for call_id, (_, call_entry) in walk.open.items()
            if call_id not in walk.answered
        }
    return walk.out
