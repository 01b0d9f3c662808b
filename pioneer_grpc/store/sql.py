"""The store port on a SQL database: what SQLite and PostgreSQL share (store/sqlite.py and
store/postgres.py hold what each does its own way).

Every method runs as a unit of work of the store's runner (store/runner.py): on SQLite in
the store's one thread, commits batched; on PostgreSQL in one greenlet on the event loop.
A unit runs to its end even when its caller is cancelled, and its failures leave as domain
errors (store/work.py): nothing above the store sees a driver's class.

    store = open_store(engine, tokenizer_of)   # SqliteStore or PostgresStore
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime
from functools import partial
from types import SimpleNamespace
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.errors import InvalidArgument
from pioneer_grpc.history.entry_rules import StoredCalls, call_violations, named_call_ids
from pioneer_grpc.store import append as append_store
from pioneer_grpc.store import entries as entry_store
from pioneer_grpc.store import lifecycle, retention, section_texts, token_counts
from pioneer_grpc.store import listing as listing_store
from pioneer_grpc.store import manifests as manifest_store
from pioneer_grpc.store import rendered_rounds as rendered_store
from pioneer_grpc.store import round_usage as usage_store
from pioneer_grpc.store import summaries as summary_store
from pioneer_grpc.store import threads as thread_store
from pioneer_grpc.store.append import Batch, batch_of
from pioneer_grpc.store.clock import now
from pioneer_grpc.store.copies import SqlCopies
from pioneer_grpc.store.engine import session_factory
from pioneer_grpc.store.history_state import history_read_in
from pioneer_grpc.store.locks import compression_lock
from pioneer_grpc.store.port import (
    OPTIONAL_SETTINGS,
    AppendBatch,
    AppendOutcome,
    CommitUnderWay,
    Conflict,
    Expiry,
    HistoryAsk,
    HistoryRead,
    KeptCounts,
    KeptRound,
    OpenedRound,
    PreparedManifest,
    Recorded,
    Recount,
    Removed,
    RenderedBounds,
    RoundAsk,
    RoundCommit,
    RoundUsageRecord,
    SummaryRead,
    SummaryToStore,
    ThreadFilter,
    TimeOrder,
    TurnManifest,
    TurnRecord,
    WholeRead,
    newer_is_all,
)
from pioneer_grpc.store.probe import probe_writable
from pioneer_grpc.store.runner import TransactionRunner
from pioneer_grpc.store.turns import ensure_thread_in, lock_turn
from pioneer_grpc.store.work import drain
from pioneer_grpc.tenants.callers import DEFAULT_TENANT
from pioneer_grpc.v1 import history_pb2
from pioneer_grpc.v1 import manifest_service_pb2 as manifest_pb2

# Longest a store's close waits for units of work still running (callers cancelled meanwhile).
DRAIN_SECONDS = 30.0


class Recounting(Exception):
    """Raised inside an append's unit: the thread's model counts in another tokenizer. Rolls it back."""

    def __init__(self, model: str) -> None:
        super().__init__("counted in another tokenizer")
        self.model = model


class Conflicted(Exception):
    """Raised inside a round's commit: the thread changed since the round was opened. Rolls it back."""


class LockedTurn:
    """A turn as an append's lock left it: its row, its entries (as a load reads them), the thread's
    calls of the call ids asked for, and how many entries it completed when the lock's statement
    completed it too (None: it did not)."""

    __slots__ = ("completed", "entries", "record", "thread_calls")

    def __init__(
        self,
        record: TurnRecord,
        entries: list[history_pb2.ConversationEntry],
        thread_calls: dict[str, str],
        completed: int | None = None,
    ) -> None:
        self.record = record
        self.entries = entries
        self.thread_calls = thread_calls
        self.completed = completed


class SqlStore:
    """The port on `engine`; `tokenizer_of(model)` names the tokenizer a model counts in.

    The store as opened is the default tenant's; `of_tenant` gives another tenant's view of the
    same engine and runner, whose every statement names that tenant."""

    postgres = False
    tenant = DEFAULT_TENANT

    def __init__(self, engine: AsyncEngine, tokenizer_of: Callable[[str], str]) -> None:
        self.engine = engine
        self.runner = TransactionRunner(engine)
        self.sessions = session_factory(engine)
        self.tokenizer_of = tokenizer_of
        self.tenant = DEFAULT_TENANT
        self._views: dict[str, SqlStore] = {DEFAULT_TENANT: self}
        self._parts()
        self._closed = False

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
        self.copies = SqlCopies(self)
        self.retention = _Retention(self)

    def of_tenant(self, tenant: str) -> SqlStore:
        found = self._views.get(tenant)
        if found is None:
            found = copy.copy(self)
            found.tenant = tenant
            found._parts()
            found = self._views.setdefault(tenant, found)
        return found

    async def probe(self, reclaim: bool = False) -> None:
        await probe_writable(self.engine, reclaim)

    async def close(self) -> None:
        """Waits for units of work still running (bounded), then closes the runner and the engine."""
        if self._closed:
            return
        self._closed = True
        await self.runner.close()
        await drain(DRAIN_SECONDS)
        await self.engine.dispose()

    # ---- what each database does its own way (store/sqlite.py, store/postgres.py) ----

    def lock_thread(self, conn: Connection, thread_id: str) -> str:
        """The thread's model, its row locked for the transaction; NotFound for an unknown thread."""
        raise NotImplementedError

    def lock_thread_and_turn(
        self,
        conn: Connection,
        thread_id: str,
        turn_id: str,
        call_ids: Sequence[str],
        batch: Batch | None,
        counted_model: str | None,
        complete: bool,
    ) -> tuple[str, LockedTurn, dict[str, int] | None]:
        """An append's first statements: `lock_thread`, then `lock_turn_with_entries`. The third
        value: the batch's entries already inserted by them (entry_id -> sequence), or None."""
        raise NotImplementedError

    def lock_turn_with_entries(
        self, conn: Connection, thread_id: str, turn_id: str, call_ids: Sequence[str]
    ) -> LockedTurn:
        """The turn created or touched (so locked), its entries, the thread's calls of `call_ids`."""
        raise NotImplementedError

    def inserted(
        self, conn: Connection, thread_id: str, batch: Batch, fresh_turns: list[str]
    ) -> dict[str, int]:
        """The batch's entries not stored yet, their calls, the thread's open counts and clock (the
        turns `fresh_turns` open with it); the sequence of each entry created, by entry id."""
        raise NotImplementedError

    def completed_under_lock(self, conn: Connection, thread_id: str, turn_id: str) -> int:
        raise NotImplementedError

    def completed_alone(self, conn: Connection, thread_id: str, turn_id: str) -> int | None:
        """CompleteTurn as a statement alone when the database can (else in its transaction): the
        turn's entry count, or None when it must run again in a transaction (`complete_in`)."""
        raise NotImplementedError

    def complete_in(self, conn: Connection, thread_id: str, turn_id: str) -> int:
        self.lock_thread(conn, thread_id)
        return self.completed_under_lock(conn, thread_id, turn_id)

    def open_round_in(self, conn: Connection, ask: RoundAsk) -> OpenedRound:
        raise NotImplementedError

    async def commit_round(self, commit: RoundCommit, sent: asyncio.Future[None]) -> Recorded | Conflict:
        """The round's writes when the thread is still as its open read it; `sent` resolved once the
        database is at them."""
        raise NotImplementedError

    # ---- shared reads ----

    def read_in(self, conn: Connection, ask: HistoryAsk, read: HistoryRead | None = None) -> HistoryRead:
        """`History.read` on `conn` (`read`: the state statement's answer, when made already)."""
        if read is None:
            read = history_read_in(conn, self.tenant, ask.thread_id, ask.exclude_turn_id, ask.after)
        if read.state in ask.known or not ask.whole:
            return read
        if ask.extend is not None and newer_is_all(ask.extend.state, read.state, read.newer):
            return read
        return replace(read, whole=self.whole_in(conn, ask.thread_id, read, ask.max_turns))

    def whole_in(self, conn: Connection, thread_id: str, read: HistoryRead, max_turns: int) -> WholeRead:
        """The summary and the completed entries a load of the whole history reads after `read`, the
        counts in the thread model's tokenizer where they are stored."""
        state = read.state
        key = read.exclude_turn_id if read.excluded_completed else ""
        tokenizer = self.tokenizer_of(state.model)
        summary = None
        if state.summary_id is not None:
            row = summary_store.summary_by_id_in(conn, state.summary_id)
            count, counted_in = row.token_count, row.tokenizer
            if counted_in != tokenizer:
                stored = token_counts.summary_count_in(conn, tokenizer, row.id)
                if stored is not None:
                    count, counted_in = stored, tokenizer
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
        entries, more = entry_store.completed_entries_in(conn, self.tenant, thread_id, after, key, max_turns)
        stale = [entry.sequence for entry in entries if entry.tokenizer != tokenizer]
        if stale:
            stored_counts = token_counts.entry_counts_in(conn, tokenizer, stale)
            for entry in entries:
                if entry.sequence in stored_counts:
                    entry.token_count = stored_counts[entry.sequence]
                    entry.tokenizer = tokenizer
        return WholeRead(tokenizer, key, summary, entries, more)

    # ---- an append (AppendEntries, CompleteTurn with entries) ----

    def append_in(self, conn: Connection, batch: AppendBatch) -> AppendOutcome:
        """The thread locked, the batch's turns locked or created, the entries stored (store/append.py),
        the turn completed with them when asked; Recounting when counted in another tokenizer."""
        thread_id = batch.thread_id
        entries = [new.entry for new in batch.entries]
        turn_ids = list(dict.fromkeys(entry.turn_id for entry in entries))
        rows = batch_of(self.tenant, thread_id, batch.entries, batch.tokenizer) if entries else None
        # A batch of one turn rides with the lock's statement (PostgreSQL), counted for the model expected.
        carried = rows if len(turn_ids) == 1 and batch.model else None
        turns: dict[str, LockedTurn] = {}
        inserted = None
        if turn_ids:
            model, turns[turn_ids[0]], inserted = self.lock_thread_and_turn(
                conn,
                thread_id,
                turn_ids[0],
                named_call_ids(entries),
                carried,
                batch.model,
                turn_ids == [batch.complete_turn_id],
            )
        else:
            model = self.lock_thread(conn, thread_id)
        if rows is not None and inserted is None and self.tokenizer_of(model) != batch.tokenizer:
            raise Recounting(model)
        for turn_id in turn_ids[1:]:
            turns[turn_id] = self.lock_turn_with_entries(conn, thread_id, turn_id, ())

        def check(stored: StoredCalls) -> None:
            InvalidArgument.raise_if(call_violations(entries, stored, batch.prefix))

        created: list[tuple[int, dict[str, Any]]] = []
        if rows is not None:
            created = append_store.append_rows(
                conn,
                self.tenant,
                thread_id,
                {turn_id: turn.record for turn_id, turn in turns.items()},
                rows,
                check,
                partial(self.inserted, conn),
                {turn_id: turn.entries for turn_id, turn in turns.items()},
                next(iter(turns.values())).thread_calls,
                inserted,
            )
        ids = [entry.entry_id for entry in entries]
        completed = 0
        complete_turn_id = batch.complete_turn_id
        if complete_turn_id:  # by the lock's statement, or now, after the append
            by_lock = turns[complete_turn_id].completed
            completed = (
                self.completed_under_lock(conn, thread_id, complete_turn_id) if by_lock is None else by_lock
            )
        answered = (
            _answered_entries(conn, self.tenant, thread_id, ids, created, complete_turn_id)
            if batch.with_entries
            else []
        )
        failed = sum(1 for _, row in created if row["is_error"])
        return AppendOutcome(answered, len(created), len(ids) - len(created), completed, model, failed)


def _answered_entries(
    conn: Connection,
    tenant: str,
    thread_id: str,
    ids: Sequence[str],
    created: Sequence[tuple[int, dict[str, Any]]],
    complete_turn_id: str,
) -> list[history_pb2.ConversationEntry]:
    """The batch's entries as stored, in its order: those it created from the rows as written (what a
    read of them gives, tests/history/test_append_answer.py), those stored before read back."""
    by_id: dict[str, history_pb2.ConversationEntry] = {}
    for sequence, row in created:
        # The turn completed in this transaction has its entries completed, as a read would see them.
        completed = row["completed"] or row["turn_id"] == complete_turn_id
        row_read = SimpleNamespace(**{**row, "completed": completed}, id=sequence)
        by_id.setdefault(row["entry_id"], entry_store.entry_message(row_read))
    stored = [entry_id for entry_id in dict.fromkeys(ids) if entry_id not in by_id]
    if stored:
        by_id.update((e.entry_id, e) for e in entry_store.stored_entries_in(conn, tenant, thread_id, stored))
    return [by_id[entry_id] for entry_id in ids]


class _Part:
    def __init__(self, store: SqlStore) -> None:
        self.store = store

    @property
    def runner(self) -> TransactionRunner:
        return self.store.runner

    @property
    def tenant(self) -> str:
        return self.store.tenant


async def _transact(runner: TransactionRunner, work: Callable[[Connection], Any]) -> Any:
    result, _ = await runner.transact(work)
    return result


def _settings(config: history_pb2.ThreadConfig) -> thread_store.ThreadSettings:
    return thread_store.ThreadSettings(
        max_context_tokens=config.max_context_tokens,
        response_reserve_tokens=config.response_reserve_tokens,
        model=config.model,
        summary_model=config.summary_model,
        compaction_strategy=config.compaction_strategy,
        dynamic_context_placement=config.dynamic_context_placement,
        **{name: getattr(config, name) if config.HasField(name) else None for name in OPTIONAL_SETTINGS},
    )


class _Threads(_Part):
    async def create(self, thread_id: str, config: history_pb2.ThreadConfig) -> history_pb2.Thread:
        row, entries = await _transact(
            self.runner, partial(_create, self.tenant, thread_id, _settings(config))
        )
        return thread_store.thread_message(row, entries)

    async def get(self, thread_id: str) -> history_pb2.Thread:
        row, entries = await self.runner.read(partial(_thread, self.tenant, thread_id))
        return thread_store.thread_message(row, entries)

    async def update(
        self, thread_id: str, config: history_pb2.ThreadConfig, expected: history_pb2.ThreadConfig
    ) -> history_pb2.Thread | Conflict:
        work = partial(
            thread_store.update_thread_if, self.tenant, thread_id, _settings(config), _settings(expected)
        )
        found = await _transact(self.runner, lambda conn: work(conn))
        return Conflict() if found is None else thread_store.thread_message(*found)

    async def tenant_usage(self) -> tuple[int, int]:
        tenant = self.tenant
        found: tuple[int, int] = await self.runner.read(
            lambda conn: thread_store.tenant_usage_in(conn, tenant)
        )
        return found

    async def delete(self, thread_id: str, *, etag: str = "", expiry: Expiry | None = None) -> Removed | None:
        work = partial(
            lifecycle.delete_thread_in, tenant=self.tenant, thread_id=thread_id, etag=etag, expiry=expiry
        )
        removed: Removed | None = await _transact(self.runner, work)
        return removed


def _create(
    tenant: str, thread_id: str, settings: thread_store.ThreadSettings, conn: Connection
) -> tuple[Any, int]:
    return thread_store.create_thread_in(conn, tenant, thread_id, settings)


def _thread(tenant: str, thread_id: str, conn: Connection) -> tuple[Any, int]:
    return thread_store.thread_in(conn, tenant, thread_id)


class _Entries(_Part):
    async def append(self, batch: AppendBatch) -> AppendOutcome | Recount:
        try:
            return await _transact(self.runner, partial(self.store.append_in, batch=batch))  # type: ignore[no-any-return]
        except Recounting as recount:
            return Recount(recount.model)

    async def stored_calls(
        self, thread_id: str, entries: Sequence[history_pb2.ConversationEntry]
    ) -> StoredCalls:
        tenant = self.tenant
        return await self.runner.read(
            lambda conn: entry_store.stored_calls_in(conn, tenant, thread_id, entries)
        )


class _Turns(_Part):
    async def complete(self, thread_id: str, turn_id: str) -> int:
        # One statement alone on PostgreSQL, and only when it wrote nothing a transaction.
        alone = await self.runner.alone(
            partial(self.store.completed_alone, thread_id=thread_id, turn_id=turn_id)
        )
        if alone is not None:
            return alone
        count: int = await _transact(
            self.runner, partial(self.store.complete_in, thread_id=thread_id, turn_id=turn_id)
        )
        return count

    async def abandon(self, thread_id: str, turn_id: str, allow_missing: bool = False) -> int | None:
        work = partial(
            lifecycle.abandon_turn_in,
            tenant=self.tenant,
            thread_id=thread_id,
            turn_id=turn_id,
            allow_missing=allow_missing,
        )
        dropped: int | None = await _transact(self.runner, work)
        return dropped


class _History(_Part):
    async def read(self, ask: HistoryAsk) -> HistoryRead:
        return await self.runner.read(partial(self.store.read_in, ask=ask))

    async def keep_counts(self, counts: KeptCounts) -> None:
        if counts:
            await _transact(self.runner, partial(_keep_counts, counts))

    async def latest_summary(self, thread_id: str) -> history_pb2.ThreadSummary | None:
        tenant = self.tenant

        def read(conn: Connection) -> Any:
            thread_store.thread_in(conn, tenant, thread_id)  # NotFound for an unknown thread
            return summary_store.latest_summary_in(conn, tenant, thread_id)

        row = await self.runner.read(read)
        return None if row is None else summary_store.summary_message(row)

    async def store_summary(
        self, thread_id: str, summary: SummaryToStore, exclude_turn_id: str
    ) -> HistoryRead:
        tenant = self.tenant

        def work(conn: Connection) -> HistoryRead:
            # The thread row first (the lock order of every write): its mark cleared, which also
            # tells a round opened before that the thread changed.
            thread_store.mark_compaction_in(conn, tenant, thread_id, None)
            summary_store.add_summary_in(conn, tenant, thread_id, **summary.__dict__)
            return history_read_in(conn, tenant, thread_id, exclude_turn_id)

        return await _transact(self.runner, work)  # type: ignore[no-any-return]

    async def mark_compaction_failed(self, thread_id: str, through_sequence: int) -> None:
        tenant = self.tenant
        await _transact(
            self.runner,
            lambda conn: thread_store.mark_compaction_in(conn, tenant, thread_id, through_sequence),
        )

    @asynccontextmanager
    async def compression_lock(self, thread_id: str, wait_seconds: float) -> AsyncIterator[bool]:
        # Named by tenant and thread: two tenants' threads of one id are two threads.
        name = f"{self.tenant}\x1f{thread_id}"
        async with compression_lock(self.store.engine, name, wait_seconds) as held:
            yield held


def _keep_counts(counts: KeptCounts, conn: Connection) -> None:
    token_counts.store_in(conn, counts.tokenizer, dict(counts.entries), counts.summary)


class _Rounds(_Part):
    async def open(self, ask: RoundAsk) -> OpenedRound:
        return await self.runner.read(partial(self.store.open_round_in, ask=ask))

    def commit(self, commit: RoundCommit) -> CommitUnderWay:
        sent: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        return CommitUnderWay(sent, asyncio.ensure_future(self.store.commit_round(commit, sent)))


class _Manifests(_Part):
    async def record(self, prepared: PreparedManifest) -> Recorded:
        tenant = self.tenant

        def work(conn: Connection) -> Recorded:
            ensure_thread_in(conn, tenant, prepared.thread_id)
            return manifest_store.record_in(
                conn, tenant, prepared, lock_turn(conn, tenant, prepared.thread_id, prepared.turn_id)
            )

        recorded, committed_id = await self.runner.transact(work, manifest_store.id_setting)
        return manifest_store.numbered(recorded, committed_id)

    async def turn_manifest(self, thread_id: str, turn_id: str) -> TurnManifest:
        return await self.runner.read(partial(_turn_manifest, self.tenant, thread_id, turn_id))

    async def event(self, event_id: int, *, every_tenant: bool = False) -> manifest_pb2.ManifestEvent:
        tenant = None if every_tenant else self.tenant
        return await self.runner.read(lambda conn: manifest_store.event_by_id_in(conn, tenant, event_id))

    async def events_after(
        self, after_id: int, *, thread_id: str = "", limit: int = 500, every_tenant: bool = False
    ) -> list[manifest_pb2.ManifestEvent]:
        tenant = None if every_tenant else self.tenant
        return await self.runner.read(
            lambda conn: manifest_store.events_after_in(conn, tenant, after_id, thread_id, limit)
        )

    async def newest_event_id(self) -> int:
        return await self.runner.read(manifest_store.newest_event_id_in)

    async def keep_texts(self, thread_id: str, texts: Mapping[str, str]) -> None:
        if not texts:
            return
        created = now()
        try:
            tenant = self.tenant
            await _transact(
                self.runner, lambda conn: section_texts.keep_in(conn, tenant, thread_id, texts, created)
            )
        except IntegrityError:  # the thread was deleted meanwhile: nothing to keep
            return

    async def texts(self, thread_id: str, fingerprints: Collection[str]) -> dict[str, str]:
        tenant = self.tenant
        return await self.runner.read(
            lambda conn: section_texts.texts_in(conn, tenant, thread_id, fingerprints)
        )

    async def threads_created(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        found: dict[tuple[str, str], str] = await self.runner.read(
            partial(manifest_store.threads_created_in, keys=keys)
        )
        return found


def _turn_manifest(tenant: str, thread_id: str, turn_id: str, conn: Connection) -> TurnManifest:
    return manifest_store.turn_manifest_in(conn, tenant, thread_id, turn_id)


class _Listing(_Part):
    async def threads(
        self,
        after: tuple[str, str] | None,
        size: int,
        *,
        every_tenant: bool = False,
        where: ThreadFilter | None = None,
    ) -> tuple[list[history_pb2.Thread], bool]:
        tenant = None if every_tenant else self.tenant
        return await self.runner.read(
            lambda conn: listing_store.threads_page(conn, tenant, after, size, where)
        )

    async def threads_by_time(
        self,
        by: TimeOrder,
        after: tuple[datetime, str, str] | None,
        size: int,
        *,
        every_tenant: bool = False,
        where: ThreadFilter | None = None,
    ) -> tuple[list[history_pb2.Thread], bool]:
        tenant = None if every_tenant else self.tenant
        return await self.runner.read(
            lambda conn: listing_store.threads_by_time_page(conn, tenant, by, after, size, where)
        )

    async def turns(
        self, thread_id: str, after: tuple[datetime, str] | None, size: int
    ) -> tuple[list[history_pb2.Turn], bool]:
        tenant = self.tenant
        return await self.runner.read(
            lambda conn: listing_store.turns_page(conn, tenant, thread_id, after, size)
        )

    async def entries(
        self, thread_id: str, turn_id: str, after_sequence: int, size: int
    ) -> tuple[list[history_pb2.ConversationEntry], bool]:
        tenant = self.tenant
        return await self.runner.read(
            lambda conn: listing_store.entries_page(conn, tenant, thread_id, turn_id, after_sequence, size)
        )


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
        tenant = self.tenant
        await _transact(
            self.runner,
            lambda conn: rendered_store.keep(
                conn, tenant, thread_id, turn_id, event_id, round_pb, moment, bounds
            ),
        )

    async def turn_rounds(self, thread_id: str, turn_id: str, not_before: datetime) -> list[KeptRound]:
        tenant = self.tenant
        return await self.runner.read(
            lambda conn: rendered_store.turn_rounds(conn, tenant, thread_id, turn_id, not_before)
        )


class _Retention(_Part):
    async def expired(self, expiry: Expiry, limit: int) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = await self.runner.read(
            partial(retention.expired_in, expiry=expiry, limit=limit)
        )
        return found

    @asynccontextmanager
    async def sweep_lock(self) -> AsyncIterator[bool]:
        async with compression_lock(self.store.engine, retention.SWEEPER_LOCK, 0) as held:
            yield held


class _Usage(_Part):
    async def record(self, usage: RoundUsageRecord) -> None:
        tenant = self.tenant
        await _transact(self.runner, lambda conn: usage_store.record(conn, tenant, usage))

    async def thread_rounds(self, thread_id: str, limit: int) -> list[RoundUsageRecord]:
        tenant = self.tenant
        return await self.runner.read(lambda conn: usage_store.thread_rounds(conn, tenant, thread_id, limit))

    async def timeline(
        self, thread_id: str, after_round: int, limit: int, breaks_only: bool
    ) -> tuple[list[tuple[int, RoundUsageRecord]], int, int]:
        tenant = self.tenant
        return await self.runner.read(
            lambda conn: usage_store.timeline(conn, tenant, thread_id, after_round, limit, breaks_only)
        )


def open_store(engine: AsyncEngine, tokenizer_of: Callable[[str], str]) -> SqlStore:
    """The store on `engine`'s database: SQLite's or PostgreSQL's."""
    if engine.dialect.name == "postgresql":
        from pioneer_grpc.store.postgres import PostgresStore

        return PostgresStore(engine, tokenizer_of)
    from pioneer_grpc.store.sqlite import SqliteStore

    return SqliteStore(engine, tokenizer_of)
