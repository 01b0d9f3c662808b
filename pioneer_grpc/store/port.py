"""The store port: what the use cases ask of storage, one interface per concern.

The use cases (service/) reach storage only through a `Store`: SQLite and PostgreSQL
implement it (store/sql.py, store/sqlite.py, store/postgres.py), and so does an
in-memory fake (store/memory.py) that the fast tests run the use cases on. One
contract suite (tests/store/contract/) runs every method against all three.

    thread = await store.threads.create("t-1", config)
    outcome = await store.entries.append(AppendBatch("t-1", counted, tokenizer, model))
    opened = await store.rounds.open(RoundAsk(...))       # everything a round needs, in one call
    committed = await store.rounds.commit(RoundCommit(...))  # or a Conflict: open again

Every thread belongs to a tenant, and a thread id is unique within its tenant only. A store
is one tenant's view: the store as opened is the default tenant's, `store.of_tenant(name)`
another's, over the same database; every thread-scoped statement of a view names its tenant,
so another tenant's thread is, to it, a thread that does not exist. Only the listing of
threads and the manifest events may read across tenants, when asked (`every_tenant`: an
admin's ListThreads and WatchManifests).

    acme = store.of_tenant("acme")
    await acme.threads.get("t-1")       # acme's t-1; NotFound when only another tenant has one

Every method is data in, data out: no method calls back into its caller. A round is
optimistic: `open` reads without holding anything, the use case decides with no
storage in between, and `commit` writes only if the thread is still as `open` read
it (its `version`), else it answers Conflict and writes nothing. The implementations
keep what makes a round fast (one statement to open it on PostgreSQL, one to commit;
commits batched in SQLite's one thread) inside themselves.

Errors: a method raises only `pioneer_grpc.errors` (NotFound, AlreadyExists, ...;
a failing database as UNAVAILABLE or RESOURCE_EXHAUSTED, store/failures.py): driver
exceptions never leave an implementation.

Messages are the contract's (history_pb2.Thread, ConversationEntry, ...): the store
answers with them rather than with a second set of classes that mirror them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Generator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pioneer_grpc.history.entry_rules import StoredCalls
from pioneer_grpc.v1 import history_pb2, prompt_pb2
from pioneer_grpc.v1 import manifest_service_pb2 as manifest_pb2

if TYPE_CHECKING:
    from pioneer_grpc.store.copy_port import Copies

__all__ = [
    "NO_ENTRIES",
    "OPTIONAL_SETTINGS",
    "AppendBatch",
    "AppendOutcome",
    "CommitUnderWay",
    "Conflict",
    "Expiry",
    "Extendable",
    "HistoryAsk",
    "HistoryRead",
    "HistoryState",
    "KeptCounts",
    "KeptRound",
    "NewEntry",
    "OpenedRound",
    "PreparedManifest",
    "Recorded",
    "Recount",
    "Removed",
    "RenderedBounds",
    "RoundAsk",
    "RoundCommit",
    "RoundPrepared",
    "Store",
    "StoredCalls",
    "StoredEntry",
    "SummaryRead",
    "SummaryToStore",
    "ThreadFilter",
    "TurnManifest",
    "TurnRecord",
    "WholeRead",
]


# ---- what the methods take and give ----------------------------------------------------------

# ThreadConfig's optional fields the store keeps as NULL (None) when unset: the default.
OPTIONAL_SETTINGS = (
    "keep_tool_results",
    "compaction_trigger_percent",
    "compaction_low_water_percent",
    "clear_at_least_percent",
    "retention_days",
)

# `after` when no entry is wanted: larger than any sequence.
NO_ENTRIES = 2**62


@dataclass(frozen=True)
class HistoryState:
    max_context_tokens: int
    response_reserve_tokens: int
    model: str
    summary_model: str
    compaction_strategy: int
    keep_tool_results: int | None
    compaction_failed_sequence: int | None
    compaction_trigger_percent: int | None
    compaction_low_water_percent: int | None
    clear_at_least_percent: int | None
    dynamic_context_placement: int
    summary_id: int | None
    completed_count: int
    completed_max_id: int | None
    # The thread's creation time as the database holds it: a thread deleted and created again
    # under its id is another state, so no kept answer of the one before serves it, on any server.
    created: str = ""


@dataclass(frozen=True)
class SummaryRead:
    """The thread's newest summary as a load reads it, its count in the tokenizer asked for when the
    store holds one (else as stored, in `tokenizer`)."""

    summary_id: int
    text: str
    token_count: int
    tokenizer: str
    covers_through_entry_id: str
    covers_through_sequence: int
    summarizer: str
    model: str


@dataclass(frozen=True)
class WholeRead:
    """What a load of the whole history reads: the newest summary, and the completed entries after it
    of the newest turns (`more`: older ones exist), oldest first, leaving out turn `key` ("" when
    leaving out the excluded turn changes nothing). Counts are in `tokenizer` (the thread model's)
    where the store holds them; an entry or summary whose `tokenizer` is another is still to count."""

    tokenizer: str
    key: str
    summary: SummaryRead | None
    entries: list[history_pb2.ConversationEntry]
    more: bool


@dataclass(frozen=True)
class HistoryRead:
    # What was asked: the turn left out, and the sequence after which completed entries were read.
    exclude_turn_id: str
    after: int
    state: HistoryState
    # Entries of turns not completed but the excluded turn's: what a load leaves out (entries, turns).
    left_out: tuple[int, int]
    # Whether the excluded turn has completed entries (leaving it out changes what a load reads).
    excluded_completed: bool
    # The completed entries after the sequence asked for, oldest first.
    newer: list[history_pb2.ConversationEntry]
    # The whole history, when it was asked for and read (store/port.py HistoryAsk).
    whole: WholeRead | None = None


# The state's fields that only completed entries move: the rest change with a setting or a summary.
_MOVED_BY_ENTRIES = ("completed_count", "completed_max_id")
_SETTINGS = tuple(f.name for f in fields(HistoryState) if f.name not in _MOVED_BY_ENTRIES)


def newer_is_all(kept: HistoryState, state: HistoryState, newer: list[history_pb2.ConversationEntry]) -> bool:
    """Whether completed entries `newer` (read after a kept answer's newest, with `state`) are all that
    changed since the answer's state `kept`: its settings and summary as they were, and the count and
    largest id of completed entries moved by them exactly (entries are never deleted)."""
    if not newer or any(getattr(kept, name) != getattr(state, name) for name in _SETTINGS):
        return False
    return (
        state.completed_count == kept.completed_count + len(newer)
        and newer[-1].sequence == state.completed_max_id
    )


@dataclass(frozen=True)
class NewEntry:
    """An entry to append, hashed and counted by the use case (in the batch's tokenizer)."""

    entry: history_pb2.ConversationEntry
    content_hash: str
    token_count: int


@dataclass(frozen=True)
class AppendOutcome:
    entries: list[history_pb2.ConversationEntry]
    created_count: int
    existing_count: int
    # With `complete_turn_id`: how many entries the completed turn has.
    completed_entry_count: int = 0
    # The thread's model as the append found it.
    model: str = ""
    # Of the entries it created, the tool results that report their tool failed (is_error).
    failed_results: int = 0


@dataclass(frozen=True)
class AppendBatch:
    """AppendEntries' (and CompleteTurn's) batch: `entries` counted in `tokenizer`, the tokenizer of
    `model`, the model the use case expects the thread to have (None: it does not know).

    The store refuses (INVALID_ARGUMENT, fields named `{prefix}[i]...`) what the history
    rules refuse against what it holds (history/entry_rules.py `call_violations`), an entry
    stored with other content (ALREADY_EXISTS), a new entry of a completed turn
    (FAILED_PRECONDITION); and answers Recount, storing nothing, when the thread's model
    counts in another tokenizer than `tokenizer`. With `complete_turn_id` that turn is
    completed in the same transaction; without `with_entries` the outcome has counts only."""

    thread_id: str
    entries: Sequence[NewEntry]
    tokenizer: str
    model: str | None
    prefix: str = "entries"
    with_entries: bool = True
    complete_turn_id: str = ""


@dataclass(frozen=True)
class Recount:
    """The batch was counted for another model than the thread's: nothing was stored. Count it again
    in `model`'s tokenizer and append again."""

    model: str


@dataclass(frozen=True)
class Extendable:
    """A kept answer that completed entries after `through` extend: the state it was kept with."""

    state: HistoryState
    through: int


@dataclass(frozen=True)
class HistoryAsk:
    """What a load asks of a thread's history (`History.read`, and a round's `Rounds.open`).

    The store reads the thread's state, what a load leaves out besides `exclude_turn_id`,
    and the completed entries after `extend.through` (none without `extend`). When the
    state is one of `known` (the caller keeps an answer for it) that is all. Else, when
    `extend` is given and the entries read are all that changed since its state, that is
    all too. Else, with `whole`, it reads what a load of the whole history reads
    (`HistoryRead.whole`): the newest summary and the completed entries after it of the
    newest `max_turns` turns, the counts in the tokenizer of the thread's model where it
    holds them.
    """

    thread_id: str
    exclude_turn_id: str = ""
    known: tuple[HistoryState, ...] = ()
    extend: Extendable | None = None
    whole: bool = True
    max_turns: int = 200

    @property
    def after(self) -> int:
        return self.extend.through if self.extend is not None else NO_ENTRIES


@dataclass(frozen=True)
class KeptCounts:
    """Counts a load made in `tokenizer` for what it read counted in another: entries by sequence, and
    the summary's (id, count). Stored once; later reads give them."""

    tokenizer: str
    entries: Mapping[int, int] = field(default_factory=dict)
    summary: tuple[int, int] | None = None

    def __bool__(self) -> bool:
        return bool(self.entries) or self.summary is not None


@dataclass(frozen=True)
class SummaryToStore:
    text: str
    token_count: int
    tokenizer: str
    covers_through_entry_id: str
    covers_through_sequence: int
    model: str
    summarizer: str


@dataclass(frozen=True)
class TurnRecord:
    """A turn's row as a round needs it."""

    status: int
    manifest_json: str | None
    event_id: int | None


@dataclass(frozen=True)
class StoredEntry:
    """An entry the thread holds, as an append checks a repeat against it: its client fields (as a
    load reads them, with its reasoning) and its content hash."""

    entry: history_pb2.ConversationEntry
    content_hash: str


@dataclass(frozen=True)
class PreparedManifest:
    """A manifest as it will be stored on its turn and as its event: encoded before any storage."""

    thread_id: str
    turn_id: str
    manifest: prompt_pb2.PromptManifest
    encoded: bytes
    as_json: str


@dataclass(frozen=True)
class Recorded:
    """A manifest recorded on its turn: the event id, and the new event to publish (None when the turn
    held this very manifest already: nothing was written)."""

    event_id: int
    event: manifest_pb2.ManifestEvent | None


@dataclass(frozen=True)
class RoundAsk:
    """What a PrepareTurn round reads: the history leaving out its turn (`history`), its turn, which of
    `call_ids` the thread's entries made, and which of `entry_ids` it holds."""

    thread_id: str
    turn_id: str
    history: HistoryAsk
    call_ids: tuple[str, ...] = ()
    entry_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpenedRound:
    """Everything a round needs, as one read found it; `version` is what `commit` checks."""

    history: HistoryRead
    # The turn's row; None when no such turn exists yet.
    turn: TurnRecord | None
    # The turn's entries, oldest first, as a load reads them.
    turn_entries: list[history_pb2.ConversationEntry]
    # Call id -> an entry of the thread that made it, for the call ids asked for.
    thread_calls: dict[str, str]
    # The entries asked for that the thread holds, in any turn, by entry id.
    stored: dict[str, StoredEntry]
    version: object

    @property
    def model(self) -> str:
        return self.history.state.model


@dataclass(frozen=True)
class RoundPrepared:
    """What a thread's timeline keeps of a round as its commit makes it (its row in
    store/round_usage.py, which a later report of its usage fills in): how many of the turn's own
    messages it sent, the provider and model, its HistoryDecision, and its prefix break (cause 0:
    the prefix held, or not known; detail: the section or entry id)."""

    turn_message_count: int
    provider: int
    model: str
    history_decision: int = 0
    break_cause: int = 0
    break_detail: str = ""
    break_tokens_invalidated: int = 0
    break_tokens_kept: int = 0
    break_entry_ids: tuple[str, ...] = ()
    break_entry_count: int = 0


@dataclass(frozen=True)
class RoundCommit:
    """A round's writes, made only when the thread is as the round's `open` read it (`version`, and its
    turn's status): the turn created or touched, `entries` appended to it (counted in `tokenizer`;
    `opens_turn` when the turn held none), the manifest recorded on it, and counts a load made."""

    thread_id: str
    turn_id: str
    version: object
    turn_status: int | None
    manifest: PreparedManifest
    entries: Sequence[NewEntry] = ()
    tokenizer: str = ""
    opens_turn: bool = False
    counts: KeptCounts | None = None
    # (fingerprint, text) of the round's sections the thread may not have kept yet
    # (store/section_texts.py): kept in the same transaction, each at most once.
    texts: tuple[tuple[str, str], ...] = ()
    # The round's row on the thread's timeline, keyed by the turn's event id as committed: written
    # once (the same round committed again keeps its row), in the same transaction.
    round: RoundPrepared | None = None


@dataclass(frozen=True)
class Conflict:
    """The thread changed since the round was opened: nothing was written. Open it again."""


@dataclass(frozen=True)
class CommitUnderWay:
    """A round's commit, begun: `sent` once what is left of it waits on the database alone (SQLite:
    its statements ran and the sync is next; PostgreSQL: its statement is on its way), or once it
    failed. Work done then runs beside it, as the body's JSON does; then it is awaited for its
    outcome."""

    sent: asyncio.Future[None]
    done: asyncio.Future[Recorded | Conflict]

    def __await__(self) -> Generator[Any, None, Recorded | Conflict]:
        return self.done.__await__()


@dataclass(frozen=True)
class TurnManifest:
    manifest: prompt_pb2.PromptManifest
    status: int
    event_id: int


@dataclass(frozen=True)
class RenderedBounds:
    rounds_per_thread: int
    total_bytes: int
    max_age: timedelta


@dataclass(frozen=True)
class KeptRound:
    round: int
    created_at: datetime
    round_pb: bytes


@dataclass(frozen=True)
class RoundUsageRecord:
    """A round of a thread's timeline: written by its commit (`prepared_at`), and its usage as the
    provider reported it, against what the server expected of its body, once a loop reports it.

    A round is (thread, turn, manifest event, turn messages): rounds of a turn that compile the same
    prompt share their event and differ in how many of the turn's own messages they sent (0: not
    known, the round was prepared elsewhere). None: not known; `reported_at` None (and the reported
    figures with it): no usage reported yet. The prefix break's cause is a PrefixBreakCause (0: the
    prefix held, or not known); its detail is the section or entry id. `prepared_at` None: a round
    reported before commits wrote rounds, or one this server did not prepare.
    """

    thread_id: str
    turn_id: str
    manifest_event_id: int
    turn_message_count: int
    provider: int
    model: str
    input_tokens: int | None
    cache_read_input_tokens: int | None
    cache_write_input_tokens: int | None
    output_tokens: int | None
    reasoning_output_tokens: int | None
    expected_input_tokens: int | None
    expected_cache_read_input_tokens: int | None
    expected_cache_write_input_tokens: int | None
    expected_input_cost_usd: float | None
    reported_input_cost_usd: float | None
    break_cause: int
    break_detail: str
    break_tokens_invalidated: int
    break_tokens_kept: int
    reported_at: datetime | None
    # The entries a history break summarized, cleared or dropped (the first MAX_BREAK_ENTRIES), and
    # how many there were; the round's HistoryDecision (0: not known).
    break_entry_ids: tuple[str, ...] = ()
    break_entry_count: int = 0
    history_decision: int = 0
    prepared_at: datetime | None = None

    @property
    def reported(self) -> bool:
        return self.reported_at is not None


@dataclass(frozen=True)
class Expiry:
    """When a thread is expired: at `moment`, after its `retention_days` without a write (its own,
    else `default_days`; 0 days: never)."""

    moment: datetime
    default_days: int

    def days(self, retention_days: int | None) -> int:
        return self.default_days if retention_days is None else retention_days

    def expired(self, updated_at: datetime, retention_days: int | None) -> bool:
        days = self.days(retention_days)
        return days > 0 and updated_at < self.moment - timedelta(days=days)


@dataclass(frozen=True)
class Removed:
    """A deleted thread: the bytes of what it held (entries, summaries, manifests, kept rounds)."""

    bytes: int


# ---- one interface per concern ---------------------------------------------------------------


class Threads(Protocol):
    async def create(self, thread_id: str, config: history_pb2.ThreadConfig) -> history_pb2.Thread:
        """The new thread; the stored one when it exists with this config (a retried create);
        ALREADY_EXISTS naming the settings that differ otherwise. `config` has every setting
        resolved (`keep_tool_results` unset: the default)."""
        ...

    async def get(self, thread_id: str) -> history_pb2.Thread: ...

    async def update(
        self, thread_id: str, config: history_pb2.ThreadConfig, expected: history_pb2.ThreadConfig
    ) -> history_pb2.Thread | Conflict:
        """Sets the thread's config to `config` (its compaction mark cleared), when it is `expected`;
        Conflict otherwise, changing nothing."""
        ...

    async def delete(self, thread_id: str, *, etag: str = "", expiry: Expiry | None = None) -> Removed | None:
        """Deletes the thread and every row stored for it, in one transaction: what it removed; None
        when it does not exist, or with `expiry` when it is not expired (a write since it was listed).
        With `etag` (Thread.etag): Aborted ETAG_MISMATCH, deleting nothing, when it is not the
        thread's. Its id may be created again from scratch."""
        ...

    async def tenant_usage(self) -> tuple[int, int]:
        """The view's tenant's threads, and the bytes its entries hold that a cap counts
        (store/entries.py `stored_bytes`): what the tenants file's caps are checked against."""
        ...


class Entries(Protocol):
    async def append(self, batch: AppendBatch) -> AppendOutcome | Recount: ...

    async def stored_calls(
        self, thread_id: str, entries: Sequence[history_pb2.ConversationEntry]
    ) -> StoredCalls:
        """What the thread holds for the entries' tool calls (their turns' entries, the thread's calls
        of the ids they name): to name every violation of a batch refused anyway. An unknown thread
        holds nothing."""
        ...


class Turns(Protocol):
    async def complete(self, thread_id: str, turn_id: str) -> int:
        """Completes the turn and its entries (again: a no-op); how many entries it has."""
        ...

    async def abandon(self, thread_id: str, turn_id: str, allow_missing: bool = False) -> int | None:
        """Drops a turn not completed, in one transaction: its entries (their calls and counts),
        its manifest, events and kept rounds; the thread's open counts follow. How many entries it
        had; None for a turn that does not exist with `allow_missing` (NotFound without).
        FailedPrecondition TURN_COMPLETED for a completed turn, which stays as it is."""
        ...


class History(Protocol):
    async def read(self, ask: HistoryAsk) -> HistoryRead: ...

    async def keep_counts(self, counts: KeptCounts) -> None: ...

    async def latest_summary(self, thread_id: str) -> history_pb2.ThreadSummary | None: ...

    async def store_summary(
        self, thread_id: str, summary: SummaryToStore, exclude_turn_id: str
    ) -> HistoryRead:
        """Stores the summary and clears the compaction mark, in one transaction; the state after it
        (leaving out `exclude_turn_id`)."""
        ...

    async def mark_compaction_failed(self, thread_id: str, through_sequence: int) -> None: ...

    def compression_lock(self, thread_id: str, wait_seconds: float) -> AbstractAsyncContextManager[bool]:
        """Held while this caller may compress the thread (one at a time, across processes and
        replicas); yields False when `wait_seconds` ran out first."""
        ...


class Rounds(Protocol):
    async def open(self, ask: RoundAsk) -> OpenedRound: ...

    def commit(self, commit: RoundCommit) -> CommitUnderWay:
        """Begins the commit (on the running event loop); it runs to its end even when whoever
        awaits it is cancelled."""
        ...


class Manifests(Protocol):
    async def record(self, prepared: PreparedManifest) -> Recorded:
        """The manifest on its turn (thread and turn created when missing) and as a new event."""
        ...

    async def turn_manifest(self, thread_id: str, turn_id: str) -> TurnManifest: ...

    async def event(self, event_id: int, *, every_tenant: bool = False) -> manifest_pb2.ManifestEvent:
        """The event (ManifestEvent.tenant names its tenant); another tenant's is NotFound, as a
        missing one, unless `every_tenant`."""
        ...

    async def events_after(
        self, after_id: int, *, thread_id: str = "", limit: int = 500, every_tenant: bool = False
    ) -> list[manifest_pb2.ManifestEvent]:
        """The view's tenant's events after `after_id` (every tenant's with `every_tenant`)."""
        ...

    async def newest_event_id(self) -> int:
        """The newest event id of every tenant: a position in the one sequence of ids."""
        ...

    async def keep_texts(self, thread_id: str, texts: Mapping[str, str]) -> None:
        """Keeps each section text (by its fingerprint) the thread has not kept yet; nothing for a
        thread that does not exist (store/section_texts.py)."""
        ...

    async def texts(self, thread_id: str, fingerprints: Collection[str]) -> dict[str, str]:
        """The thread's kept texts of `fingerprints` (one not kept is left out)."""
        ...

    async def threads_created(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """The creation time (as HistoryState.created) of each of the threads `keys` (tenant, thread
        id; of any tenant) that exists: what the hub compares to end the watches of a thread another
        process deleted."""
        ...


@dataclass(frozen=True)
class ThreadFilter:
    """What ListThreads' filter asks of a thread (service/thread_filter.py parses it): every id
    substring, the model, whether a round broke the prefix, update time comparisons."""

    id_contains: tuple[str, ...] = ()
    model: str | None = None
    has_cache_breaks: bool | None = None
    # (operator, moment): "<", "<=", ">" or ">=".
    updated: tuple[tuple[str, datetime], ...] = ()

    def with_id(self, text: str) -> ThreadFilter:
        return replace(self, id_contains=(*self.id_contains, text))

    def with_model(self, model: str) -> ThreadFilter:
        return replace(self, model=model)

    def with_breaks(self, has: bool) -> ThreadFilter:
        return replace(self, has_cache_breaks=has)

    def with_time(self, op: str, moment: datetime) -> ThreadFilter:
        return replace(self, updated=(*self.updated, (op, moment)))


# Which time ListThreads orders by: the thread's creation or its last update.
TimeOrder = Literal["created", "updated"]


class Listing(Protocol):
    async def threads(
        self,
        after: tuple[str, str] | None,
        size: int,
        *,
        every_tenant: bool = False,
        where: ThreadFilter | None = None,
    ) -> tuple[list[history_pb2.Thread], bool]:
        """Threads by (thread id, tenant) after `after`: the view's tenant's, or every tenant's;
        those `where` asks for (ListThreads' filter)."""
        ...

    async def threads_by_time(
        self,
        by: TimeOrder,
        after: tuple[datetime, str, str] | None,
        size: int,
        *,
        every_tenant: bool = False,
        where: ThreadFilter | None = None,
    ) -> tuple[list[history_pb2.Thread], bool]:
        """Threads latest first by (the `by` time, thread id, tenant) descending, after `after`:
        newest first by creation time, or most recently updated first."""
        ...

    async def turns(
        self, thread_id: str, after: tuple[datetime, str] | None, size: int
    ) -> tuple[list[history_pb2.Turn], bool]: ...

    async def entries(
        self, thread_id: str, turn_id: str, after_sequence: int, size: int
    ) -> tuple[list[history_pb2.ConversationEntry], bool]: ...


class RenderedRounds(Protocol):
    async def keep(
        self,
        thread_id: str,
        turn_id: str,
        event_id: int,
        round_pb: bytes,
        moment: datetime,
        bounds: RenderedBounds,
    ) -> None: ...

    async def turn_rounds(self, thread_id: str, turn_id: str, not_before: datetime) -> list[KeptRound]: ...


class RoundUsage(Protocol):
    async def record(self, usage: RoundUsageRecord) -> None:
        """Stores a round's usage: into the round's row when its commit wrote one (its place, time
        and prefix break kept), else as a row of its own; the same round reported again replaces
        what was reported."""
        ...

    async def thread_rounds(self, thread_id: str, limit: int) -> list[RoundUsageRecord]:
        """The thread's reported rounds, newest round first, at most `limit`."""
        ...

    async def timeline(
        self, thread_id: str, after_round: int, limit: int, breaks_only: bool
    ) -> tuple[list[tuple[int, RoundUsageRecord]], int, int]:
        """The thread's rounds (committed or reported) oldest first, each with its number (from 1),
        after round `after_round`, at most `limit`, only those whose prefix broke when
        `breaks_only`; and how many rounds and breaks the thread has in all."""
        ...


class Retention(Protocol):
    async def expired(self, expiry: Expiry, limit: int) -> list[tuple[str, str]]:
        """At most `limit` threads of every tenant expired at `expiry`, as (tenant, thread id), of
        each retention the oldest write first,
        read from an index (no scan of the threads)."""
        ...

    def sweep_lock(self) -> AbstractAsyncContextManager[bool]:
        """Held by one sweeper at a time across processes and replicas; yields False at once when
        another holds it."""
        ...


class Store(Protocol):
    @property
    def tenant(self) -> str:
        """The tenant whose view this is."""
        ...

    def of_tenant(self, tenant: str) -> Store:
        """`tenant`'s view of the same store (the same database, runner and pool)."""
        ...

    @property
    def threads(self) -> Threads: ...
    @property
    def entries(self) -> Entries: ...
    @property
    def turns(self) -> Turns: ...
    @property
    def history(self) -> History: ...
    @property
    def rounds(self) -> Rounds: ...
    @property
    def manifests(self) -> Manifests: ...
    @property
    def listing(self) -> Listing: ...
    @property
    def rendered(self) -> RenderedRounds: ...
    @property
    def usage(self) -> RoundUsage: ...
    @property
    def copies(self) -> Copies: ...
    @property
    def retention(self) -> Retention: ...

    async def probe(self, reclaim: bool = False) -> None:
        """Returns once the store took a write; raises what it met otherwise. `reclaim` after a
        failed probe: give back space the store may hold (SQLite's WAL)."""
        ...

    async def close(self) -> None: ...
