"""A deleted thread leaves no row in any table of the schema, on SQLite and PostgreSQL.

The tables are enumerated from the schema's metadata, not listed here: a table added to the
schema fails this test until store/lifecycle.py THREAD_ROWS says how a thread's rows in it are
found (and so deleted). A thread beside it keeps every row it had.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select

from pioneer_grpc.adapters import build_summarizer
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.config import Config
from pioneer_grpc.events.hub import ManifestHub
from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.service import history, lifecycle
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.history_load import load_history
from pioneer_grpc.store import rendered_rounds  # noqa: F401  (its table is in the metadata)
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.lifecycle import THREAD_ROWS
from pioneer_grpc.store.models import Base
from pioneer_grpc.store.port import (
    HistoryAsk,
    KeptCounts,
    RenderedBounds,
    RoundAsk,
    RoundCommit,
    RoundUsageRecord,
    Store,
    SummaryToStore,
)
from pioneer_grpc.store.sql import SqlStore, open_store
from pioneer_grpc.v1 import history_pb2
from tests.store.contract.rows import (
    CL100K,
    O200K,
    answer,
    call,
    config,
    counted,
    manifest,
    result,
    turn,
    user,
)

BOUNDS = RenderedBounds(rounds_per_thread=10, total_bytes=1 << 20, max_age=timedelta(days=1))


async def _everything(store: Store, thread_id: str) -> None:
    """A row of the thread in every table: entries, calls, a summary, counts in another
    tokenizer for both, a turn with its manifest and event, a kept rendered round, its usage,
    a section text."""
    await store.threads.create(thread_id, config())
    await turn(store, thread_id, "u1", user("q1", "u1"), call("c1", "u1", "k1"), result("r1", "u1", "k1"))
    await turn(store, thread_id, "u2", user("q2", "u2"), answer("a2", "u2"))
    whole = (await store.history.read(HistoryAsk(thread_id))).whole
    assert whole is not None
    summary = SummaryToStore("what was said", 5, CL100K, "r1", whole.entries[2].sequence, "m", "extractive")
    stored = await store.history.store_summary(thread_id, summary, "")
    assert stored.state.summary_id is not None
    await store.history.keep_counts(
        KeptCounts(O200K, {whole.entries[3].sequence: 11}, (stored.state.summary_id, 4))
    )
    opened = await store.rounds.open(RoundAsk(thread_id, "u3", HistoryAsk(thread_id, "u3")))
    recorded = await store.rounds.commit(
        RoundCommit(
            thread_id,
            "u3",
            opened.version,
            None,
            manifest(thread_id, "u3"),
            counted(user("q3", "u3")),
            CL100K,
            opens_turn=True,
        )
    )
    event_id = recorded.event_id  # type: ignore[union-attr]
    await store.rendered.keep(thread_id, "u3", event_id, b"round", datetime.now(UTC), BOUNDS)
    await store.manifests.keep_texts(thread_id, {"f" * 64: "## Identity\nyou are pioneer"})
    await store.usage.record(
        RoundUsageRecord(
            thread_id,
            "u3",
            event_id,
            1,
            1,
            "claude-sonnet-4-5",
            100,
            90,
            0,
            7,
            None,
            100,
            90,
            0,
            0.0001,
            0.0001,
            0,
            "",
            0,
            0,
            datetime.now(UTC),
        )
    )


async def _rows(store: SqlStore, thread_id: str) -> dict[str, int]:
    counts = {}
    async with store.engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            assert table.name in THREAD_ROWS, f"{table.name}: no way to find (and delete) a thread's rows"
            where = THREAD_ROWS[table.name]("default", thread_id)
            counts[table.name] = await conn.scalar(select(func.count()).select_from(table).where(where))
    return counts


async def test_a_deleted_thread_leaves_no_row_in_any_table(database_url: str) -> None:
    store = open_store(create_engine(database_url), packaged_registry().tokenizer_of)
    try:
        await _everything(store, "gone")
        await _everything(store, "kept")
        kept_before = await _rows(store, "kept")
        assert all(kept_before.values()), kept_before  # the fixture reaches every table
        assert await store.threads.delete("gone") is not None
        assert set((await _rows(store, "gone")).values()) == {0}
        assert await _rows(store, "kept") == kept_before
        assert await store.threads.delete("gone") is None
    finally:
        await store.close()


async def _worker(store: Store, home: Path) -> ServiceContext:
    """A server process's own caches over the shared database (`serve --workers N`, or a replica)."""
    hub = ManifestHub(store.manifests, poll_seconds=3600)
    return ServiceContext(
        config=Config(listen="127.0.0.1:0", home=home),
        root_store=store,
        hub=hub,
        summarizer=build_summarizer("extractive"),
        models=packaged_registry(),
    )


async def test_no_worker_serves_a_deleted_thread_from_what_it_kept(database_url: str, tmp_path: Path) -> None:
    """Worker B keeps the thread's history; worker A deletes the thread and creates it again with as
    many entries (on SQLite they take the deleted ones' sequences): B loads the new thread's."""
    home = tmp_path / "home"
    home.mkdir()
    ensure_bootstrap_files(home)
    tokenizer_of = packaged_registry().tokenizer_of
    stores = [open_store(create_engine(database_url), tokenizer_of) for _ in range(2)]
    a, b = [await _worker(store, home) for store in stores]
    try:
        thread = history_pb2.ThreadConfig(model="claude-sonnet-4-5")
        await history.create_thread(a, "t", thread)
        await history.complete_turn(
            a, "t", "s0", [user("q0", "", "old question"), answer("a0", "", "old answer")]
        )
        kept, _ = await load_history(b, "t")
        assert [m.content for m in kept] == ["old question", "old answer"] and len(b.load_cache) == 1
        assert await lifecycle.delete_thread(a, "t") is True
        await history.create_thread(a, "t", thread)
        await history.complete_turn(
            a, "t", "s0", [user("q0", "", "new question"), answer("a0", "", "new answer")]
        )
        fresh, _ = await load_history(b, "t")
        assert [m.content for m in fresh] == ["new question", "new answer"]
    finally:
        for store in stores:
            await store.close()
