"""Export -> import round-trips 2,000 generated threads with equal loads, on every store.

Threads are drawn from one seed: images and files (inline and by URI), a call id reused across
turns, failed results, results long enough to be cleared, reasoning, summaries with counts in a
second tokenizer, a compaction mark, an open last turn. Each is stored, exported through the use
case, imported under another id, and both are loaded: the messages and the report are the same
bytes, and after the loads both export the same stream but for the id.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pioneer_grpc.adapters import build_summarizer
from pioneer_grpc.compiler.seed import ensure_bootstrap_files
from pioneer_grpc.config import Config
from pioneer_grpc.events.hub import ManifestHub
from pioneer_grpc.history.entries import content_hash
from pioneer_grpc.models.registry import packaged_registry
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.copies import export_thread, import_thread
from pioneer_grpc.service.history_load import load_history
from pioneer_grpc.store.copy_port import CopiedEntry, CopiedSummary, CopiedTurn, ThreadCopy
from pioneer_grpc.store.engine import create_engine
from pioneer_grpc.store.memory import MemoryStore
from pioneer_grpc.store.port import Store
from pioneer_grpc.store.sql import open_store
from pioneer_grpc.v1 import chat_pb2, history_pb2
from tests.databases import fresh_postgres_database, migrated_sqlite

H = history_pb2
# Threads per store: all 2,000 in memory; on each database a seeded share of them, so the suite
# stays within its time (every thread is drawn either way: the draw does not depend on the store).
THREADS = 2_000
ON_DATABASE = 60
MODELS = ["claude-sonnet-4-5", "gpt-4o", "gemini-2.5-pro"]
START = datetime(2026, 1, 1, tzinfo=UTC)


def _entry(
    rng: random.Random, entry_id: str, turn_id: str, role: int, moment: datetime
) -> H.ConversationEntry:
    entry = H.ConversationEntry(
        entry_id=entry_id, turn_id=turn_id, role=role, token_count=rng.randrange(5, 900)
    )
    entry.tokenizer = "cl100k_base"
    entry.create_time.FromDatetime(moment)
    return entry


def _turn(rng: random.Random, t: int, clock: datetime) -> list[H.ConversationEntry]:
    turn_id = f"turn-{t}"
    step = timedelta(milliseconds=rng.randrange(1, 5000))
    user = _entry(rng, f"u{t}", turn_id, H.ENTRY_ROLE_USER, clock)
    user.content = f"request {t}: " + "x" * rng.randrange(0, 300)
    if rng.random() < 0.15:
        user.content_parts.add(
            image=chat_pb2.MediaPart(mime_type="image/png", data=rng.randbytes(rng.randrange(1, 4000)))
        )
    if rng.random() < 0.05:
        user.content_parts.add(
            file=chat_pb2.MediaPart(mime_type="application/pdf", uri=f"https://files.example/{t}.pdf")
        )
    entries = [user]
    for c in range(rng.randrange(0, 3)):
        call_id = f"call_{rng.randrange(0, 3)}"  # ids reused across turns, as models number them
        call = _entry(rng, f"a{t}.{c}", turn_id, H.ENTRY_ROLE_ASSISTANT, clock + step * (2 * c + 1))
        call.tool_calls.add(id=call_id, name="read_file", arguments=f'{{"path": "f{t}.{c}"}}')
        if rng.random() < 0.3:
            call.reasoning_content = "first the file"
        result = _entry(rng, f"r{t}.{c}", turn_id, H.ENTRY_ROLE_TOOL, clock + step * (2 * c + 2))
        result.tool_call_id, result.name = call_id, "read_file"
        result.content = "line\n" * rng.choice([1, 20, 400])
        result.token_count = len(result.content) // 2
        result.is_error = rng.random() < 0.1
        entries += [call, result]
    final = _entry(rng, f"f{t}", turn_id, H.ENTRY_ROLE_ASSISTANT, clock + step * 9)
    final.content = f"done {t}"
    return [*entries, final]


def generated(seed: int) -> ThreadCopy:
    rng = random.Random(seed)
    clock = START + timedelta(minutes=seed)
    turns, entries = [], []
    count = rng.randrange(1, 9)
    for t in range(count):
        completed = t < count - 1 or rng.random() < 0.8
        made = _turn(rng, t, clock)
        for entry in made:
            entry.completed = completed
            counts = {"o200k_base": entry.token_count + 1} if rng.random() < 0.3 else {}
            entries.append(CopiedEntry(entry, content_hash(entry), counts))
        status = H.TURN_STATUS_COMPLETED if completed else H.TURN_STATUS_IN_PROGRESS
        turns.append(CopiedTurn(f"turn-{t}", status, clock, clock + timedelta(seconds=10)))
        clock += timedelta(seconds=30)
    done = [e for e in entries if e.entry.completed]
    summaries = []
    for s in range(rng.randrange(0, 3) if len(done) > 2 else 0):
        covered = done[rng.randrange(0, len(done) - 1)].entry
        summary = H.ThreadSummary(
            text=f"summary {s} " + "y" * rng.randrange(0, 200),
            covers_through_entry_id=covered.entry_id,
            token_count=rng.randrange(10, 200),
            model="small",
            summarizer="extractive",
        )
        summary.create_time.FromDatetime(clock + timedelta(seconds=s))
        summaries.append(CopiedSummary(summary, "cl100k_base", {"o200k_base": 50} if s else {}))
    summaries.sort(key=lambda c: [e.entry.entry_id for e in entries].index(c.summary.covers_through_entry_id))
    config = H.ThreadConfig(
        max_context_tokens=rng.choice([2_500, 4_000, 16_000, 200_000]),
        response_reserve_tokens=1_000,
        model=rng.choice(MODELS),
    )
    if rng.random() < 0.5:
        config.keep_tool_results = rng.randrange(0, 4)
    failed = done[-1].entry.entry_id if done and rng.random() < 0.1 else ""
    return ThreadCopy(config, START, clock, failed, turns, entries, summaries)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def ctx(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ServiceContext]:
    home = tmp_path / "home"
    home.mkdir()
    ensure_bootstrap_files(home)
    models = packaged_registry()
    if request.param == "memory":
        yield await _context(MemoryStore(models.tokenizer_of), home)
        return
    if request.param == "sqlite":
        await migrated_sqlite(tmp_path / "round.db")
        store = open_store(create_engine(f"sqlite+aiosqlite:///{tmp_path / 'round.db'}"), models.tokenizer_of)
        yield await _context(store, home)
        await store.close()
        return
    async with fresh_postgres_database(migrated=True) as url:
        store = open_store(create_engine(url), models.tokenizer_of)
        yield await _context(store, home)
        await store.close()


async def _context(store: Store, home: Path) -> ServiceContext:
    return ServiceContext(
        config=Config(listen="127.0.0.1:0", home=home),
        root_store=store,
        hub=ManifestHub(store.manifests, poll_seconds=3600),
        summarizer=build_summarizer("extractive"),
        models=packaged_registry(),
    )


async def _loaded(ctx: ServiceContext, thread_id: str) -> list[bytes]:
    messages, report = await load_history(ctx, thread_id, "", dry_run=True)
    return [m.SerializeToString(deterministic=True) for m in messages] + [
        report.SerializeToString(deterministic=True)
    ]


async def _stream(ctx: ServiceContext, thread_id: str) -> bytes:
    return b"".join(await export_thread(ctx, thread_id))


async def _chunks(stream: bytes) -> AsyncIterator[bytes]:
    for i in range(0, len(stream), 8192):
        yield stream[i : i + 8192]


async def test_export_then_import_round_trips_generated_threads_with_equal_loads(ctx: ServiceContext) -> None:
    share = THREADS if isinstance(ctx.store, MemoryStore) else ON_DATABASE
    picked = sorted(random.Random(43).sample(range(THREADS), share))
    features = {"image": 0, "summary": 0, "cleared": 0, "reused": 0, "open": 0, "error": 0}
    for seed in range(THREADS):
        copy = generated(seed)
        if seed not in picked:
            continue
        await ctx.store.copies.write(f"s{seed}", copy)
        stream = await _stream(ctx, f"s{seed}")
        imported = await import_thread(ctx, f"i{seed}", _chunks(stream))
        assert imported.thread.entry_count == len(copy.entries)
        source_load = await _loaded(ctx, f"s{seed}")
        assert await _loaded(ctx, f"i{seed}") == source_load, seed
        # Exported again (the loads kept their counts in the model's tokenizer, on both): the same.
        again = (await _stream(ctx, f"s{seed}")).replace(b'"thread_id":"s', b'"thread_id":"i', 1)
        assert await _stream(ctx, f"i{seed}") == again, seed
        report = H.HistoryDecisionReport.FromString(source_load[-1])
        features["image"] += any(e.entry.content_parts for e in copy.entries)
        features["summary"] += bool(copy.summaries)
        features["cleared"] += len(report.cleared_tool_results) > 0
        features["reused"] += len({c.id for e in copy.entries for c in e.entry.tool_calls}) < sum(
            len(e.entry.tool_calls) for e in copy.entries
        )
        features["open"] += any(not e.entry.completed for e in copy.entries)
        features["error"] += any(e.entry.is_error for e in copy.entries)
        # The store stays small: the fake's reads walk all it holds.
        await ctx.store.threads.delete(f"s{seed}")
        await ctx.store.threads.delete(f"i{seed}")
    # The draw reaches every feature it is meant to, on every store.
    assert all(count >= share // 100 for count in features.values()), features
