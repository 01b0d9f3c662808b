"""The store port in memory: what the fast tests run the use cases on.

It keeps the rows the SQL stores keep (threads, turns, entries, tool calls, summaries,
counts, events, rendered rounds) in dictionaries and answers every method as they do:
tests/store/contract/ runs one suite against it, SQLite and PostgreSQL. Nothing survives
the process; one asyncio lock serialises its writes, as a database's lock would.
"""

from __future__ import annotations

import asyncio
import copy
import operator
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from types import SimpleNamespace
from typing import Any, cast

from google.protobuf import json_format

from pioneer_grpc import reasons
from pioneer_grpc.errors import Aborted, AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from pioneer_grpc.history.budget import DEFAULT_MAX_CONTEXT_TOKENS, DEFAULT_RESPONSE_RESERVE_TOKENS
from pioneer_grpc.history.entry_rules import StoredCalls, call_violations, named_call_ids
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.entries import (
    entry_conflict,
    entry_message,
    entry_values,
    held_entry,
    loaded_entry,
    stored_bytes,
    turn_completed,
)
from pioneer_grpc.store.manifests import new_event
from pioneer_grpc.store.memory_copies import MemoryCopies
from pioneer_grpc.store.port import (
    OPTIONAL_SETTINGS,
    AppendBatch,
    AppendOutcome,
    CommitUnderWay,
    Conflict,
    Expiry,
    HistoryAsk,
    HistoryRead,
    HistoryState,
    KeptCounts,
    KeptRound,
    NewEntry,
    OpenedRound,
    PreparedManifest,
    Recorded,
    Recount,
    Removed,
    RenderedBounds,
    RoundAsk,
    RoundCommit,
    RoundPrepared,
    RoundUsageRecord,
    StoredEntry,
    SummaryRead,
    SummaryToStore,
    ThreadFilter,
    TimeOrder,
    TurnManifest,
    TurnRecord,
    WholeRead,
    newer_is_all,
)
from pioneer_grpc.store.round_usage import REPORTED
from pioneer_grpc.store.threads import thread_etag, thread_not_found, turn_not_found
from pioneer_grpc.tenants.callers import DEFAULT_TENANT
from pioneer_grpc.v1 import history_pb2, prompt_pb2
from pioneer_grpc.v1 import manifest_service_pb2 as manifest_pb2

IN_PROGRESS = history_pb2.TURN_STATUS_IN_PROGRESS
COMPLETED = history_pb2.TURN_STATUS_COMPLETED
_SETTINGS = (
    "max_context_tokens",
    "response_reserve_tokens",
    "model",
    "summary_model",
    "compaction_strategy",
    *OPTIONAL_SETTINGS,
    "dynamic_context_placement",
)


@dataclass
class _Thread:
    thread_id: str
    max_context_tokens: int
    response_reserve_tokens: int
    model: str
    summary_model: str
    compaction_strategy: int
    keep_tool_results: int | None
    created_at: datetime
    updated_at: datetime
    compaction_failed_sequence: int | None = None
    compaction_trigger_percent: int | None = None
    compaction_low_water_percent: int | None = None
    clear_at_least_percent: int | None = None
    dynamic_context_placement: int = 0
    retention_days: int | None = None
    open_entries: int = 0
    open_turns: int = 0
    completed_entries: int = 0
    # Moved by every write of what a round reads: the version a round's commit checks.
    version: int = 0


@dataclass
class _Turn:
    status: int
    created_at: datetime
    updated_at: datetime
    manifest_json: str | None = None
    event_id: int | None = None


@dataclass
class _Event:
    id: int
    thread_id: str
    turn_id: str
    manifest_pb: bytes
    created_at: datetime


@dataclass
class _Kept:
    id: int
    thread_id: str
    turn_id: str
    round: int
    created_at: datetime
    round_pb: bytes


@dataclass
class _Tables:
    threads: dict[str, _Thread] = field(default_factory=dict)
    turns: dict[tuple[str, str], _Turn] = field(default_factory=dict)
    # By sequence (the global id), as rows: `entry_values` plus `id`.
    entries: dict[int, SimpleNamespace] = field(default_factory=dict)
    by_entry_id: dict[tuple[str, str], int] = field(default_factory=dict)
    # (thread, call id) -> entry ids that made it.
    calls: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    summaries: dict[int, SimpleNamespace] = field(default_factory=dict)
    entry_counts: dict[tuple[int, str], int] = field(default_factory=dict)
    summary_counts: dict[tuple[int, str], int] = field(default_factory=dict)
    events: dict[int, _Event] = field(default_factory=dict)
    kept: dict[int, _Kept] = field(default_factory=dict)
    usage: list[RoundUsageRecord] = field(default_factory=list)
    # (thread, fingerprint) -> the section's text.
    texts: dict[tuple[str, str], str] = field(default_factory=dict)
    seq: _Sequences = field(default_factory=lambda: _Sequences())


@dataclass
class _Sequences:
    """Ids drawn across every tenant, as the SQL stores' sequences are."""

    entry: int = 1
    summary: int = 1
    event: int = 1
    kept: int = 1
    version: int = 0


class MemoryStore:
    """`tokenizer_of(model)`: the tokenizer a model counts in (the model registry's).

    Each tenant's rows are tables of their own (ids drawn from one set of sequences); the store
    as made is the default tenant's view, `of_tenant` another's."""

    def __init__(self, tokenizer_of: Callable[[str], str]) -> None:
        self.tenant = DEFAULT_TENANT
        self._t = _Tables()
        self._tenants: dict[str, _Tables] = {DEFAULT_TENANT: self._t}
        self._views: dict[str, MemoryStore] = {DEFAULT_TENANT: self}
        self._lock = asyncio.Lock()
        self._tokenizer_of = tokenizer_of
        self._compressing: dict[str, asyncio.Lock] = {}
        # One sweeper for every tenant's view.
        self._sweeping = asyncio.Lock()
        self._parts()

    def of_tenant(self, tenant: str) -> MemoryStore:
        found = self._views.get(tenant)
        if found is None:
            found = copy.copy(self)
            found.tenant = tenant
            found._t = self._tenants.setdefault(tenant, _Tables(seq=self._t.seq))
            found._compressing = {}
            found._parts()
            found = self._views.setdefault(tenant, found)
        return found

    def _parts(self) -> None:
        self.threads = _Threads(self)
        self.entries = _Entries(self)
        self.turns = _Turns(self)
        self.history = _History(self)
        self.rounds = _Rounds(self)
        self.manifests = _Manifests(self)
        self.listing = _Listing(self)
        self.rendered = _Rendered(self)
        self.usage = _Usage(self)
        self.copies = MemoryCopies(self)
        self.retention = _Retention(self)

    async def probe(self, reclaim: bool = False) -> None:
        return None

    async def close(self) -> None:
        return None

    # ---- rows, as the SQL stores read them ----

    def thread(self, thread_id: str) -> _Thread:
        found = self._t.threads.get(thread_id)
        if found is None:
            raise thread_not_found(thread_id)
        return found

    def thread_message(self, thread: _Thread) -> history_pb2.Thread:
        message = history_pb2.Thread(
            thread_id=thread.thread_id,
            config=history_pb2.ThreadConfig(
                max_context_tokens=thread.max_context_tokens,
                response_reserve_tokens=thread.response_reserve_tokens,
                model=thread.model,
                summary_model=thread.summary_model,
                compaction_strategy=cast(Any, thread.compaction_strategy),
                dynamic_context_placement=cast(Any, thread.dynamic_context_placement),
            ),
            entry_count=sum(1 for row in self._t.entries.values() if row.thread_id == thread.thread_id),
            tenant=self.tenant,
        )
        for name in OPTIONAL_SETTINGS:
            value = getattr(thread, name)
            if value is not None:
                setattr(message.config, name, value)
        message.create_time.FromDatetime(thread.created_at)
        message.update_time.FromDatetime(thread.updated_at)
        message.etag = thread_etag(thread.created_at, thread.updated_at, message.entry_count)
        return message

    def rows_of(self, thread_id: str) -> list[SimpleNamespace]:
        return [row for _, row in sorted(self._t.entries.items()) if row.thread_id == thread_id]

    def turn_rows(self, thread_id: str, turn_id: str) -> list[SimpleNamespace]:
        return [row for row in self.rows_of(thread_id) if row.turn_id == turn_id]

    def state(self, thread: _Thread) -> HistoryState:
        summaries = [s.id for s in self._t.summaries.values() if s.thread_id == thread.thread_id]
        completed = [row.id for row in self.rows_of(thread.thread_id) if row.completed]
        return HistoryState(
            max_context_tokens=thread.max_context_tokens,
            response_reserve_tokens=thread.response_reserve_tokens,
            model=thread.model,
            summary_model=thread.summary_model,
            compaction_strategy=thread.compaction_strategy,
            keep_tool_results=thread.keep_tool_results,
            compaction_failed_sequence=thread.compaction_failed_sequence,
            compaction_trigger_percent=thread.compaction_trigger_percent,
            compaction_low_water_percent=thread.compaction_low_water_percent,
            clear_at_least_percent=thread.clear_at_least_percent,
            dynamic_context_placement=thread.dynamic_context_placement,
            summary_id=max(summaries, default=None),
            completed_count=thread.completed_entries,
            completed_max_id=max(completed, default=None),
            created=thread.created_at.isoformat(),
        )

    def read(self, ask: HistoryAsk) -> HistoryRead:
        thread = self.thread(ask.thread_id)
        rows = self.rows_of(ask.thread_id)
        excluded = [row for row in rows if row.turn_id == ask.exclude_turn_id]
        excluded_open = sum(1 for row in excluded if not row.completed)
        newer = [loaded_entry(row) for row in rows if row.completed and row.id > ask.after]
        read = HistoryRead(
            ask.exclude_turn_id,
            ask.after,
            self.state(thread),
            (thread.open_entries - excluded_open, thread.open_turns - (1 if excluded_open else 0)),
            any(row.completed for row in excluded),
            newer,
        )
        if read.state in ask.known:
            return read
        if ask.extend is not None and newer_is_all(ask.extend.state, read.state, newer):
            return read
        if not ask.whole:
            return read
        return replace(read, whole=self.whole(ask.thread_id, read, ask.max_turns))

    def whole(self, thread_id: str, read: HistoryRead, max_turns: int) -> WholeRead:
        state = read.state
        key = read.exclude_turn_id if read.excluded_completed else ""
        tokenizer = self._tokenizer_of(state.model)
        summary = None
        if state.summary_id is not None:
            row = self._t.summaries[state.summary_id]
            count = row.token_count
            counted_in = row.tokenizer
            if counted_in != tokenizer and (row.id, tokenizer) in self._t.summary_counts:
                count, counted_in = self._t.summary_counts[(row.id, tokenizer)], tokenizer
            summary = SummaryRead(
                row.id,
                row.text,
                count,
                counted_in,
                row.covers_through_entry_id,
                row.covers_through_sequence,
                row.summarizer,
                row.model,
            )
        after = summary.covers_through_sequence if summary is not None else 0
        rows = [
            row
            for row in self.rows_of(thread_id)
            if row.completed and row.id > after and (not key or row.turn_id != key)
        ]
        firsts: dict[str, int] = {}
        for row in rows:
            firsts.setdefault(row.turn_id, row.id)
        newest = sorted(firsts.values(), reverse=True)[: max_turns + 1]
        more = len(newest) > max_turns
        if more:
            rows = [row for row in rows if row.id >= newest[max_turns - 1]]
        entries = []
        for row in rows:
            entry = loaded_entry(row)
            if entry.tokenizer != tokenizer and (row.id, tokenizer) in self._t.entry_counts:
                entry.token_count = self._t.entry_counts[(row.id, tokenizer)]
                entry.tokenizer = tokenizer
            entries.append(entry)
        return WholeRead(tokenizer, key, summary, entries, more)

    def keep_counts(self, counts: KeptCounts) -> None:
        for sequence, count in counts.entries.items():
            if sequence in self._t.entries:
                self._t.entry_counts.setdefault((sequence, counts.tokenizer), count)
        if counts.summary is not None and counts.summary[0] in self._t.summaries:
            self._t.summary_counts.setdefault((counts.summary[0], counts.tokenizer), counts.summary[1])

    def lock_turn(self, thread_id: str, turn_id: str, moment: datetime) -> _Turn:
        """Creates the turn (in progress) unless it exists; an existing one is touched."""
        turn = self._t.turns.get((thread_id, turn_id))
        if turn is None:
            turn = self._t.turns[(thread_id, turn_id)] = _Turn(IN_PROGRESS, moment, moment)
        else:
            turn.updated_at = moment
        return turn

    def thread_calls(self, thread_id: str, call_ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for call_id in sorted(set(call_ids)):
            made = self._t.calls.get((thread_id, call_id))
            if made:
                found[call_id] = sorted(made)[-1]  # the last of call_id, entry_id order, as the SQL's
        return found

    def insert(
        self,
        thread_id: str,
        entries: Sequence[NewEntry],
        tokenizer: str,
        fresh: Sequence[str],
        moment: datetime,
    ) -> dict[str, int]:
        """The entries not stored yet, their calls, the thread's open counts; sequence by entry id."""
        created: dict[str, int] = {}
        opened: set[str] = set()
        for new in entries:
            key = (thread_id, new.entry.entry_id)
            if key in self._t.by_entry_id:
                continue
            sequence = self._t.seq.entry
            self._t.seq.entry += 1
            values = entry_values(thread_id, new, tokenizer, moment)
            self._t.entries[sequence] = SimpleNamespace(**values, id=sequence)
            self._t.by_entry_id[key] = sequence
            created[new.entry.entry_id] = sequence
            opened.add(new.entry.turn_id)
            for call in new.entry.tool_calls:
                made = self._t.calls.setdefault((thread_id, call.id), [])
                if new.entry.entry_id not in made:
                    made.append(new.entry.entry_id)
        if created:
            thread = self._t.threads[thread_id]
            thread.updated_at = moment
            thread.open_entries += len(created)
            thread.open_turns += len(opened & set(fresh))
            thread.version += 1
        return created

    def complete(self, thread_id: str, turn_id: str) -> int:
        turn = self._t.turns.get((thread_id, turn_id))
        rows = self.turn_rows(thread_id, turn_id)
        if turn is None:
            raise turn_not_found(thread_id, turn_id)
        if turn.status == COMPLETED:
            return len(rows)
        turn.status = COMPLETED
        turn.updated_at = now()
        for row in rows:
            row.completed = True
        if rows:
            thread = self._t.threads[thread_id]
            thread.open_entries -= len(rows)
            thread.open_turns -= 1
            thread.completed_entries += len(rows)
            thread.version += 1
        return len(rows)

    def drop_entries(self, sequences: list[int]) -> None:
        """The entries of `sequences`, their calls and their counts in other tokenizers."""
        for sequence in sequences:
            row = self._t.entries.pop(sequence)
            self._t.by_entry_id.pop((row.thread_id, row.entry_id), None)
            for counted in [key for key in self._t.entry_counts if key[0] == sequence]:
                del self._t.entry_counts[counted]
            for call, made in list(self._t.calls.items()):
                if call[0] == row.thread_id and row.entry_id in made:
                    made.remove(row.entry_id)
                    if not made:
                        del self._t.calls[call]

    def drop_events_and_kept(self, dropped: Callable[[_Event | _Kept | RoundUsageRecord], bool]) -> None:
        """Drops the events, kept rounds and round usage `dropped` names (a turn's, or a thread's)."""
        for event_id in [i for i, row in self._t.events.items() if dropped(row)]:
            del self._t.events[event_id]
        for kept_id in [i for i, row in self._t.kept.items() if dropped(row)]:
            del self._t.kept[kept_id]
        self._t.usage[:] = [row for row in self._t.usage if not dropped(row)]

    def abandon(self, thread_id: str, turn_id: str, allow_missing: bool) -> int | None:
        thread = self.thread(thread_id)
        turn = self._t.turns.get((thread_id, turn_id))
        if turn is None:
            if allow_missing:
                return None
            raise turn_not_found(thread_id, turn_id)
        if turn.status == COMPLETED:
            raise FailedPrecondition(
                f"turn {turn_id!r} of thread {thread_id!r} is completed: it is history, never dropped",
                reason=reasons.TURN_COMPLETED,
                metadata={"thread_id": thread_id, "turn_id": turn_id},
            )
        rows = self.turn_rows(thread_id, turn_id)
        self.drop_entries([row.id for row in rows])
        del self._t.turns[(thread_id, turn_id)]
        self.drop_events_and_kept(lambda row: (row.thread_id, row.turn_id) == (thread_id, turn_id))
        if rows:
            thread.open_entries -= len(rows)
            thread.open_turns -= 1
        thread.updated_at = now()
        thread.version += 1
        return len(rows)

    def delete(self, thread_id: str, etag: str, expiry: Expiry | None) -> Removed | None:
        thread = self._t.threads.get(thread_id)
        if thread is None or (
            expiry is not None and not expiry.expired(thread.updated_at, thread.retention_days)
        ):
            return None
        if etag and etag != self.thread_message(thread).etag:
            raise Aborted(
                f"thread {thread_id!r} changed since its etag {etag!r} was read; nothing was deleted: "
                "read it again (GetThread) and decide again",
                reason=reasons.ETAG_MISMATCH,
                metadata={"thread_id": thread_id},
            )
        removed = Removed(self.stored_bytes(thread_id))
        del self._t.threads[thread_id]
        self.drop_entries([s for s, row in self._t.entries.items() if row.thread_id == thread_id])
        for turn in [k for k in self._t.turns if k[0] == thread_id]:
            del self._t.turns[turn]
        for summary_id in [i for i, row in self._t.summaries.items() if row.thread_id == thread_id]:
            del self._t.summaries[summary_id]
            for counted in [k for k in self._t.summary_counts if k[0] == summary_id]:
                del self._t.summary_counts[counted]
        self.drop_events_and_kept(lambda row: row.thread_id == thread_id)
        for key in [k for k in self._t.texts if k[0] == thread_id]:
            del self._t.texts[key]
        self._compressing.pop(thread_id, None)
        return removed

    def stored_bytes(self, thread_id: str) -> int:
        """As the SQL stores count it (store/lifecycle.py _stored_bytes)."""

        def size(value: str | bytes | None) -> int:
            return len(value.encode() if isinstance(value, str) else value or b"")

        entries = [row for row in self._t.entries.values() if row.thread_id == thread_id]
        return sum(
            (
                *(
                    size(row.content)
                    + size(row.tool_calls_json)
                    + size(row.artifact_refs_json)
                    + size(row.reasoning_content)
                    + size(row.content_parts_pb)
                    for row in entries
                ),
                *(size(row.text) for row in self._t.summaries.values() if row.thread_id == thread_id),
                *(size(turn.manifest_json) for key, turn in self._t.turns.items() if key[0] == thread_id),
                *(size(row.manifest_pb) for row in self._t.events.values() if row.thread_id == thread_id),
                *(size(row.round_pb) for row in self._t.kept.values() if row.thread_id == thread_id),
            )
        )

    def record(self, prepared: PreparedManifest, turn: _Turn) -> Recorded:
        if turn.event_id is not None and turn.manifest_json == prepared.as_json:
            return Recorded(turn.event_id, None)
        created = now()
        event_id = self._t.seq.event
        self._t.seq.event += 1
        self._t.events[event_id] = _Event(
            event_id, prepared.thread_id, prepared.turn_id, prepared.encoded, created
        )
        turn.manifest_json, turn.event_id, turn.updated_at = prepared.as_json, event_id, created
        return Recorded(event_id, new_event(event_id, self.tenant, prepared, created))

    def version(self, thread_id: str, turn_id: str) -> tuple[int, int]:
        thread = self.thread(thread_id)
        turn = self._t.turns.get((thread_id, turn_id))
        return thread.version, IN_PROGRESS if turn is None else turn.status


def _config_of(thread: _Thread) -> dict[str, Any]:
    return {name: getattr(thread, name) for name in _SETTINGS}


def _settings(config: history_pb2.ThreadConfig) -> dict[str, Any]:
    return {
        name: (getattr(config, name) if config.HasField(name) else None)
        if name in OPTIONAL_SETTINGS
        else getattr(config, name)
        for name in _SETTINGS
    }


class _Part:
    def __init__(self, store: MemoryStore) -> None:
        self.s = store

    @property
    def t(self) -> _Tables:
        return self.s._t


class _Threads(_Part):
    async def tenant_usage(self) -> tuple[int, int]:
        return len(self.t.threads), sum(stored_bytes(vars(row)) for row in self.t.entries.values())

    async def delete(self, thread_id: str, *, etag: str = "", expiry: Expiry | None = None) -> Removed | None:
        async with self.s._lock:
            return self.s.delete(thread_id, etag, expiry)

    async def create(self, thread_id: str, config: history_pb2.ThreadConfig) -> history_pb2.Thread:
        async with self.s._lock:
            settings = _settings(config)
            found = self.t.threads.get(thread_id)
            if found is None:
                moment = now()
                found = self.t.threads[thread_id] = _Thread(
                    thread_id, **settings, created_at=moment, updated_at=moment
                )
                # Above any version a thread of this id had before it was deleted.
                self.t.seq.version += 1_000_000
                found.version = self.t.seq.version
                return self.s.thread_message(found)
            stored = _config_of(found)
            differing = [name for name in _SETTINGS if stored[name] != settings[name]]
            if differing:
                raise AlreadyExists(
                    f"thread {thread_id!r} already exists with a different {', '.join(differing)}",
                    reason=reasons.THREAD_CONFLICT,
                    metadata={"thread_id": thread_id, "differing_fields": ",".join(differing)},
                )
            return self.s.thread_message(found)

    async def get(self, thread_id: str) -> history_pb2.Thread:
        return self.s.thread_message(self.s.thread(thread_id))

    async def update(
        self, thread_id: str, config: history_pb2.ThreadConfig, expected: history_pb2.ThreadConfig
    ) -> history_pb2.Thread | Conflict:
        async with self.s._lock:
            thread = self.s.thread(thread_id)
            if _config_of(thread) != _settings(expected):
                return Conflict()
            for name, value in _settings(config).items():
                setattr(thread, name, value)
            thread.compaction_failed_sequence = None
            thread.updated_at = now()
            thread.version += 1
            return self.s.thread_message(thread)


class _Entries(_Part):
    async def append(self, batch: AppendBatch) -> AppendOutcome | Recount:
        async with self.s._lock:
            return self._append(batch)

    def _append(self, batch: AppendBatch) -> AppendOutcome | Recount:
        """As the SQL stores append: every check against what is held first (a refusal changes
        nothing, as their transaction rolls back), then the writes."""
        thread_id = batch.thread_id
        thread = self.s.thread(thread_id)
        entries = [new.entry for new in batch.entries]
        if entries and self.s._tokenizer_of(thread.model) != batch.tokenizer:
            return Recount(thread.model)
        turn_ids = list(dict.fromkeys(entry.turn_id for entry in entries))
        held = {
            turn_id: [loaded_entry(row) for row in self.s.turn_rows(thread_id, turn_id)]
            for turn_id in turn_ids
        }
        stored = StoredCalls()
        stored.turns = {turn_id: found for turn_id, found in held.items() if found}
        wanted = {entry.entry_id for entry in entries}
        stored.stored_entry_ids = {e.entry_id for found in stored.turns.values() for e in found} & wanted
        stored.thread_calls = self.s.thread_calls(thread_id, named_call_ids(entries))
        if len(stored.stored_entry_ids) < len(wanted):
            InvalidArgument.raise_if(call_violations(entries, stored, batch.prefix))
        self._check_repeats(thread_id, batch)
        moment = now()
        for turn_id in turn_ids:
            self.s.lock_turn(thread_id, turn_id, moment)
        fresh = [turn_id for turn_id in turn_ids if not stored.turns.get(turn_id)]
        created = self.s.insert(thread_id, batch.entries, batch.tokenizer, fresh, moment)
        completed = 0
        if batch.complete_turn_id:
            completed = self.s.complete(thread_id, batch.complete_turn_id)
        ids = [entry.entry_id for entry in entries]
        answered: list[history_pb2.ConversationEntry] = []
        if batch.with_entries:
            answered = [entry_message(self.t.entries[self.t.by_entry_id[(thread_id, i)]]) for i in ids]
        failed = len({new.entry.entry_id for new in batch.entries if new.entry.is_error} & set(created))
        return AppendOutcome(answered, len(created), len(ids) - len(created), completed, thread.model, failed)

    def _check_repeats(self, thread_id: str, batch: AppendBatch) -> None:
        """An entry held (or earlier in the batch) must be sent with its content; a new entry of a
        completed turn is refused."""
        first: dict[str, NewEntry] = {}
        for new in batch.entries:
            first.setdefault(new.entry.entry_id, new)
        for new in batch.entries:
            sequence = self.t.by_entry_id.get((thread_id, new.entry.entry_id))
            if sequence is not None:
                row = self.t.entries[sequence]
                if row.content_hash != new.content_hash:
                    raise entry_conflict(thread_id, entry_message(row), new.entry)
            elif (
                first[new.entry.entry_id] is not new
                and first[new.entry.entry_id].content_hash != new.content_hash
            ):
                earlier = first[new.entry.entry_id]
                row = SimpleNamespace(**entry_values(thread_id, earlier, batch.tokenizer, now()), id=0)
                raise entry_conflict(thread_id, entry_message(row), new.entry)
        for entry_id, new in first.items():
            turn = self.t.turns.get((thread_id, new.entry.turn_id))
            if (
                (thread_id, entry_id) not in self.t.by_entry_id
                and turn is not None
                and turn.status == COMPLETED
            ):
                raise turn_completed(thread_id, new.entry)

    async def stored_calls(
        self, thread_id: str, entries: Sequence[history_pb2.ConversationEntry]
    ) -> StoredCalls:
        turn_ids = list(dict.fromkeys(e.turn_id for e in entries))
        stored = StoredCalls()
        for turn_id in turn_ids:
            found = [loaded_entry(row) for row in self.s.turn_rows(thread_id, turn_id)]
            if found:
                stored.turns[turn_id] = found
        wanted = {e.entry_id for e in entries}
        stored.stored_entry_ids = {e.entry_id for turn in stored.turns.values() for e in turn} & wanted
        stored.thread_calls = self.s.thread_calls(thread_id, named_call_ids(entries))
        return stored


class _Turns(_Part):
    async def complete(self, thread_id: str, turn_id: str) -> int:
        async with self.s._lock:
            self.s.thread(thread_id)
            return self.s.complete(thread_id, turn_id)

    async def abandon(self, thread_id: str, turn_id: str, allow_missing: bool = False) -> int | None:
        async with self.s._lock:
            return self.s.abandon(thread_id, turn_id, allow_missing)


class _History(_Part):
    async def read(self, ask: HistoryAsk) -> HistoryRead:
        return self.s.read(ask)

    async def keep_counts(self, counts: KeptCounts) -> None:
        async with self.s._lock:
            self.s.keep_counts(counts)

    async def latest_summary(self, thread_id: str) -> history_pb2.ThreadSummary | None:
        self.s.thread(thread_id)
        rows = [row for row in self.t.summaries.values() if row.thread_id == thread_id]
        if not rows:
            return None
        row = max(rows, key=lambda found: found.id)
        summary = history_pb2.ThreadSummary(
            thread_id=row.thread_id,
            text=row.text,
            covers_through_entry_id=row.covers_through_entry_id,
            covers_through_sequence=row.covers_through_sequence,
            token_count=row.token_count,
            model=row.model,
            summarizer=row.summarizer,
        )
        summary.create_time.FromDatetime(row.created_at)
        return summary

    async def store_summary(
        self, thread_id: str, summary: SummaryToStore, exclude_turn_id: str
    ) -> HistoryRead:
        async with self.s._lock:
            thread = self.s.thread(thread_id)
            thread.compaction_failed_sequence = None
            summary_id = self.t.seq.summary
            self.t.seq.summary += 1
            self.t.summaries[summary_id] = SimpleNamespace(
                id=summary_id, thread_id=thread_id, created_at=now(), **summary.__dict__
            )
            thread.version += 1
            return self.s.read(HistoryAsk(thread_id, exclude_turn_id, whole=False))

    async def mark_compaction_failed(self, thread_id: str, through_sequence: int) -> None:
        async with self.s._lock:
            thread = self.t.threads.get(thread_id)
            if thread is not None and thread.compaction_failed_sequence != through_sequence:
                thread.compaction_failed_sequence = through_sequence
                thread.version += 1

    @asynccontextmanager
    async def compression_lock(self, thread_id: str, wait_seconds: float) -> AsyncIterator[bool]:
        lock = self.s._compressing.setdefault(thread_id, asyncio.Lock())
        try:
            async with asyncio.timeout(wait_seconds):
                await lock.acquire()
        except TimeoutError:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()


class _Rounds(_Part):
    async def open(self, ask: RoundAsk) -> OpenedRound:
        read = self.s.read(ask.history)
        thread_id, turn_id = ask.thread_id, ask.turn_id
        turn = self.t.turns.get((thread_id, turn_id))
        record = None if turn is None else TurnRecord(turn.status, turn.manifest_json, turn.event_id)
        stored: dict[str, StoredEntry] = {}
        for entry_id in ask.entry_ids:
            sequence = self.t.by_entry_id.get((thread_id, entry_id))
            if sequence is not None:
                row = self.t.entries[sequence]
                stored[entry_id] = StoredEntry(held_entry(row), row.content_hash)
        return OpenedRound(
            read,
            record,
            [loaded_entry(row) for row in self.s.turn_rows(thread_id, turn_id)],
            self.s.thread_calls(thread_id, ask.call_ids),
            stored,
            self.s.version(thread_id, turn_id),
        )

    def commit(self, commit: RoundCommit) -> CommitUnderWay:
        sent: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        sent.set_result(None)
        return CommitUnderWay(sent, asyncio.ensure_future(self._commit(commit)))

    async def _commit(self, commit: RoundCommit) -> Recorded | Conflict:
        async with self.s._lock:
            thread_id, turn_id = commit.thread_id, commit.turn_id
            if commit.version != self.s.version(thread_id, turn_id):
                return Conflict()
            moment = now()
            turn = self.s.lock_turn(thread_id, turn_id, moment)
            recorded = self.s.record(commit.manifest, turn)
            fresh = [turn_id] if commit.opens_turn else []
            self.s.insert(thread_id, commit.entries, commit.tokenizer, fresh, moment)
            if commit.counts:
                self.s.keep_counts(commit.counts)
            for fingerprint, text in commit.texts:
                self.t.texts.setdefault((thread_id, fingerprint), text)
            if commit.round is not None:
                self.s.usage._prepared(commit, recorded.event_id, moment)
            return recorded


class _Manifests(_Part):
    async def record(self, prepared: PreparedManifest) -> Recorded:
        async with self.s._lock:
            moment = now()
            if prepared.thread_id not in self.t.threads:
                self.t.threads[prepared.thread_id] = _Thread(
                    prepared.thread_id,
                    DEFAULT_MAX_CONTEXT_TOKENS,
                    DEFAULT_RESPONSE_RESERVE_TOKENS,
                    "",
                    "",
                    0,
                    None,
                    moment,
                    moment,
                )
                self.t.seq.version += 1_000_000
                self.t.threads[prepared.thread_id].version = self.t.seq.version
            turn = self.s.lock_turn(prepared.thread_id, prepared.turn_id, moment)
            return self.s.record(prepared, turn)

    async def keep_texts(self, thread_id: str, texts: Mapping[str, str]) -> None:
        async with self.s._lock:
            if thread_id in self.t.threads:
                for fingerprint, text in texts.items():
                    self.t.texts.setdefault((thread_id, fingerprint), text)

    async def texts(self, thread_id: str, fingerprints: Collection[str]) -> dict[str, str]:
        return {f: self.t.texts[(thread_id, f)] for f in fingerprints if (thread_id, f) in self.t.texts}

    async def turn_manifest(self, thread_id: str, turn_id: str) -> TurnManifest:
        turn = self.t.turns.get((thread_id, turn_id))
        if turn is None:
            if thread_id not in self.t.threads:
                raise NotFound(
                    f"thread {thread_id!r} not found",
                    reason=reasons.THREAD_NOT_FOUND,
                    metadata={"thread_id": thread_id},
                )
            raise NotFound(
                f"turn {turn_id!r} not found in thread {thread_id!r}",
                reason=reasons.TURN_NOT_FOUND,
                metadata={"thread_id": thread_id, "turn_id": turn_id},
            )
        if turn.manifest_json is None:
            raise NotFound(
                f"turn {turn_id!r} of thread {thread_id!r} has no manifest yet: no compile named it",
                reason=reasons.TURN_MANIFEST_NOT_FOUND,
                metadata={"thread_id": thread_id, "turn_id": turn_id},
            )
        manifest = json_format.Parse(
            turn.manifest_json, prompt_pb2.PromptManifest(), ignore_unknown_fields=True
        )
        return TurnManifest(manifest, turn.status, turn.event_id or 0)

    async def event(self, event_id: int, *, every_tenant: bool = False) -> manifest_pb2.ManifestEvent:
        found = None
        for tenant, tables in self.s._tenants.items() if every_tenant else [(self.s.tenant, self.t)]:
            if event_id in tables.events:
                found = tables.events[event_id], tenant
        if found is None:
            raise NotFound(
                f"manifest event {event_id} not found",
                reason=reasons.MANIFEST_EVENT_NOT_FOUND,
                metadata={"event_id": str(event_id)},
            )
        return _event_message(*found)

    async def events_after(
        self, after_id: int, *, thread_id: str = "", limit: int = 500, every_tenant: bool = False
    ) -> list[manifest_pb2.ManifestEvent]:
        tenants = self.s._tenants.items() if every_tenant else [(self.s.tenant, self.t)]
        found = sorted(
            (event_id, tenant, event)
            for tenant, tables in tenants
            for event_id, event in tables.events.items()
            if event_id > after_id and (not thread_id or event.thread_id == thread_id)
        )
        return [_event_message(event, tenant) for _, tenant, event in found[:limit]]

    async def newest_event_id(self) -> int:
        return max((max(t.events, default=0) for t in self.s._tenants.values()), default=0)

    async def threads_created(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        found = {}
        for tenant, thread_id in keys:
            thread = self.s._tenants.get(tenant, _Tables()).threads.get(thread_id)
            if thread is not None:
                found[(tenant, thread_id)] = thread.created_at.isoformat()
        return found


def _event_message(event: _Event, tenant: str) -> manifest_pb2.ManifestEvent:
    message = manifest_pb2.ManifestEvent(
        event_id=event.id,
        tenant=tenant,
        thread_id=event.thread_id,
        turn_id=event.turn_id,
        manifest=prompt_pb2.PromptManifest.FromString(event.manifest_pb),
    )
    message.create_time.FromDatetime(event.created_at)
    return message


class _Listing(_Part):
    def _matches(self, tenant: str, thread: _Thread, where: ThreadFilter | None) -> bool:
        if where is None:
            return True
        if not all(text in thread.thread_id for text in where.id_contains):
            return False
        if where.model is not None and thread.model != where.model:
            return False
        compare = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
        if not all(compare[op](thread.updated_at, moment) for op, moment in where.updated):
            return False
        if where.has_cache_breaks is not None:
            usage = self.s.of_tenant(tenant)._t.usage
            broke = any(r.thread_id == thread.thread_id and r.break_cause for r in usage)
            return broke == where.has_cache_breaks
        return True

    def _every(self, every_tenant: bool, where: ThreadFilter | None = None) -> list[tuple[str, _Thread]]:
        tenants = list(self.s._tenants) if every_tenant else [self.s.tenant]
        return [
            (tenant, thread)
            for tenant in tenants
            for thread in self.s.of_tenant(tenant)._t.threads.values()
            if self._matches(tenant, thread, where)
        ]

    async def threads(
        self,
        after: tuple[str, str] | None,
        size: int,
        *,
        every_tenant: bool = False,
        where: ThreadFilter | None = None,
    ) -> tuple[list[history_pb2.Thread], bool]:
        found = sorted(
            (
                (thread.thread_id, tenant, thread)
                for tenant, thread in self._every(every_tenant, where)
                if after is None or (thread.thread_id, tenant) > after
            ),
            key=lambda item: (item[0], item[1]),
        )
        threads = [self.s.of_tenant(tenant).thread_message(thread) for _, tenant, thread in found[:size]]
        return threads, len(found) > size

    async def threads_by_time(
        self,
        by: TimeOrder,
        after: tuple[datetime, str, str] | None,
        size: int,
        *,
        every_tenant: bool = False,
        where: ThreadFilter | None = None,
    ) -> tuple[list[history_pb2.Thread], bool]:
        def moment(thread: _Thread) -> datetime:
            return thread.created_at if by == "created" else thread.updated_at

        found = sorted(
            (
                (moment(thread), thread.thread_id, tenant, thread)
                for tenant, thread in self._every(every_tenant, where)
                if after is None or (moment(thread), thread.thread_id, tenant) < after
            ),
            key=lambda item: (item[0], item[1], item[2]),
            reverse=True,
        )
        threads = [self.s.of_tenant(tenant).thread_message(thread) for _, _, tenant, thread in found[:size]]
        return threads, len(found) > size

    async def turns(
        self, thread_id: str, after: tuple[datetime, str] | None, size: int
    ) -> tuple[list[history_pb2.Turn], bool]:
        self.s.thread(thread_id)
        found = sorted(
            (
                (turn.created_at, found_turn_id, turn)
                for (found_thread_id, found_turn_id), turn in self.t.turns.items()
                if found_thread_id == thread_id
                and (after is None or (turn.created_at, found_turn_id) > after)
            ),
            key=lambda item: (item[0], item[1]),
        )
        turns = []
        for created_at, turn_id, turn in found[:size]:
            message = history_pb2.Turn(
                thread_id=thread_id,
                turn_id=turn_id,
                status=cast(Any, turn.status),
                entry_count=len(self.s.turn_rows(thread_id, turn_id)),
                manifest_event_id=turn.event_id or 0,
            )
            message.create_time.FromDatetime(created_at)
            message.update_time.FromDatetime(turn.updated_at)
            turns.append(message)
        return turns, len(found) > size

    async def entries(
        self, thread_id: str, turn_id: str, after_sequence: int, size: int
    ) -> tuple[list[history_pb2.ConversationEntry], bool]:
        self.s.thread(thread_id)
        rows = [
            row
            for row in self.s.rows_of(thread_id)
            if row.id > after_sequence and (not turn_id or row.turn_id == turn_id)
        ]
        return [entry_message(row) for row in rows[:size]], len(rows) > size


class _Rendered(_Part):
    async def keep(
        self,
        thread_id: str,
        turn_id: str,
        event_id: int,
        round_pb: bytes,
        moment: datetime,
        bounds: RenderedBounds,
    ) -> None:
        async with self.s._lock:
            for tables in self.s._tenants.values():
                aged = [k for k, row in tables.kept.items() if row.created_at < moment - bounds.max_age]
                for kept_id in aged:
                    del tables.kept[kept_id]
            kept = self.t.kept
            last = max(
                (row.round for row in kept.values() if (row.thread_id, row.turn_id) == (thread_id, turn_id)),
                default=0,
            )
            kept_id = self.t.seq.kept
            self.t.seq.kept += 1
            kept[kept_id] = _Kept(kept_id, thread_id, turn_id, last + 1, moment, round_pb)
            of_thread = sorted((k for k, row in kept.items() if row.thread_id == thread_id), reverse=True)
            for beyond in of_thread[bounds.rounds_per_thread :]:
                del kept[beyond]
            # The bound on bytes is the server's, across tenants: the oldest rounds of any go first.
            every = sorted((k, tables.kept) for tables in self.s._tenants.values() for k in tables.kept)
            total = sum(len(of[k].round_pb) for k, of in every)
            for oldest, of in every:
                if total <= bounds.total_bytes:
                    break
                total -= len(of.pop(oldest).round_pb)

    async def turn_rounds(self, thread_id: str, turn_id: str, not_before: datetime) -> list[KeptRound]:
        return [
            KeptRound(row.round, row.created_at, row.round_pb)
            for _, row in sorted(self.t.kept.items())
            if (row.thread_id, row.turn_id) == (thread_id, turn_id) and row.created_at >= not_before
        ]


class _Retention(_Part):
    async def expired(self, expiry: Expiry, limit: int) -> list[tuple[str, str]]:
        found = [
            (tenant, t)
            for tenant, tables in self.s._tenants.items()
            for t in tables.threads.values()
            if expiry.expired(t.updated_at, t.retention_days)
        ]
        found.sort(
            key=lambda f: (
                f[1].retention_days is not None,
                f[1].retention_days or 0,
                f[1].updated_at,
                f[1].thread_id,
            )
        )
        return [(tenant, t.thread_id) for tenant, t in found[:limit]]

    @asynccontextmanager
    async def sweep_lock(self) -> AsyncIterator[bool]:
        if self.s._sweeping.locked():
            yield False
            return
        async with self.s._sweeping:
            yield True


# A committed round's fields besides its key (store/round_usage.py PREPARED_COLUMNS).
_PREPARED = tuple(f.name for f in fields(RoundPrepared) if f.name != "turn_message_count")


class _Usage(_Part):
    def _at(self, key: tuple[str, str, int, int]) -> int | None:
        for at, row in enumerate(self.t.usage):
            if (row.thread_id, row.turn_id, row.manifest_event_id, row.turn_message_count) == key:
                return at
        return None

    def _prepared(self, commit: RoundCommit, event_id: int, moment: datetime) -> None:
        """The commit's round's row, unless the round has one (under the store's lock)."""
        prepared = commit.round
        assert prepared is not None
        key = (commit.thread_id, commit.turn_id, event_id, prepared.turn_message_count)
        if self._at(key) is not None:
            return
        values = {name: getattr(prepared, name) for name in _PREPARED}
        self.t.usage.append(
            RoundUsageRecord(
                *key,
                **values,
                input_tokens=None,
                cache_read_input_tokens=None,
                cache_write_input_tokens=None,
                output_tokens=None,
                reasoning_output_tokens=None,
                expected_input_tokens=None,
                expected_cache_read_input_tokens=None,
                expected_cache_write_input_tokens=None,
                expected_input_cost_usd=None,
                reported_input_cost_usd=None,
                reported_at=None,
                prepared_at=moment,
            )
        )

    async def record(self, usage: RoundUsageRecord) -> None:
        key = (usage.thread_id, usage.turn_id, usage.manifest_event_id, usage.turn_message_count)
        async with self.s._lock:
            at = self._at(key)
            if at is None:
                self.t.usage.append(usage)
                return
            row = self.t.usage[at]
            self.t.usage[at] = replace(row, **{name: getattr(usage, name) for name in REPORTED})

    async def thread_rounds(self, thread_id: str, limit: int) -> list[RoundUsageRecord]:
        rows = reversed(self.t.usage)
        return [row for row in rows if row.thread_id == thread_id and row.reported][:limit]

    async def timeline(
        self, thread_id: str, after_round: int, limit: int, breaks_only: bool
    ) -> tuple[list[tuple[int, RoundUsageRecord]], int, int]:
        rows = [row for row in self.t.usage if row.thread_id == thread_id]
        found = [
            (number, row)
            for number, row in enumerate(rows, start=1)
            if number > after_round and (row.break_cause or not breaks_only)
        ]
        return found[:limit], len(rows), sum(1 for row in rows if row.break_cause)
