"""A console's worth of data written straight into a store's tables: many threads, and one long
thread with a manifest event, a round and its usage per turn and prefix breaks of every cause.

Rows go in by the thousand in a few statements, not one RPC each: the browser test and the bench
need the shape of a busy server, not the path that made it (which the store tests cover). SQLite
only for the manifest events (PostgreSQL draws event ids at commit, migration 0005); the threads and
their round usage alone (`seed_threads`) on either backend.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncEngine

from pioneer_grpc.store.manifest_json import manifest_json
from pioneer_grpc.store.models import ManifestEventRow, ThreadRow, TurnRow
from pioneer_grpc.store.round_usage import RoundUsageRow
from pioneer_grpc.store.section_texts import SectionTextRow
from pioneer_grpc.v1 import history_pb2, prompt_pb2

H = history_pb2
STABLE = prompt_pb2.SECTION_STABILITY_STABLE
DYNAMIC = prompt_pb2.SECTION_STABILITY_DYNAMIC
MODELS = ("claude-sonnet-4-5", "gpt-4o", "gemini-2.5-pro")
START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
LONG_THREAD = "incident-7731-checkout-agent"
CHUNK = 2000

# The long thread's 20 breaks: (turn, cause), a mix of every cause a round reports.
BREAKS = [
    (41, H.PREFIX_BREAK_CAUSE_SECTION),
    (90, H.PREFIX_BREAK_CAUSE_CLEARING),
    (140, H.PREFIX_BREAK_CAUSE_SUMMARY),
    (190, H.PREFIX_BREAK_CAUSE_TOOLS),
    (240, H.PREFIX_BREAK_CAUSE_SECTION),
    (290, H.PREFIX_BREAK_CAUSE_CLEARING),
    (340, H.PREFIX_BREAK_CAUSE_TURN_CAP),
    (390, H.PREFIX_BREAK_CAUSE_MODEL),
    (440, H.PREFIX_BREAK_CAUSE_SUMMARY),
    (490, H.PREFIX_BREAK_CAUSE_SECTION),
    (540, H.PREFIX_BREAK_CAUSE_CLEARING),
    (590, H.PREFIX_BREAK_CAUSE_SUMMARY),
    (640, H.PREFIX_BREAK_CAUSE_TOOLS),
    (690, H.PREFIX_BREAK_CAUSE_SECTION),
    (740, H.PREFIX_BREAK_CAUSE_TURN_CAP),
    (790, H.PREFIX_BREAK_CAUSE_CLEARING),
    (840, H.PREFIX_BREAK_CAUSE_MODEL),
    (890, H.PREFIX_BREAK_CAUSE_SUMMARY),
    (940, H.PREFIX_BREAK_CAUSE_SECTION),
    (990, H.PREFIX_BREAK_CAUSE_SECTION),
]


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def soul(version: int) -> str:
    """SOUL.md as rendered: one line changes at each section break."""
    limit = f"Refund limit: ${100 + 50 * version} without approval."
    return f"## Soul\nYou are the checkout agent.\n{limit}\nAnswer tersely."


IDENTITY = "## Identity\nYou are pioneer, an agent gateway."
TOOLS = "## Tool recovery\nRetry a failed tool once, then report it."


def _manifest(thread_id: str, turn_id: str, version: int, turn: int) -> prompt_pb2.PromptManifest:
    sections = [
        ("identity", STABLE, IDENTITY),
        ("soul_core", STABLE, soul(version)),
        ("tool_recovery_policy", STABLE, TOOLS),
        ("dynamic_context", DYNAMIC, f"## Context\nTurn {turn} of the incident."),
    ]
    stable = "\n\n".join(text for _, s, text in sections if s == STABLE)
    dynamic = "\n\n".join(text for _, s, text in sections if s == DYNAMIC)
    return prompt_pb2.PromptManifest(
        thread_id=thread_id,
        turn_id=turn_id,
        compiler_version="0.4.0",
        profile=prompt_pb2.PROMPT_PROFILE_FULL,
        section_ids=[sid for sid, _, _ in sections],
        fingerprint_stable=fingerprint(stable),
        fingerprint_dynamic=fingerprint(dynamic),
        fingerprint_full=fingerprint(stable + "\n\n" + dynamic),
        section_fingerprints=[
            prompt_pb2.SectionFingerprint(
                section_id=sid, stability=s, fingerprint=fingerprint(t), chars=len(t)
            )
            for sid, s, t in sections
        ],
    )


def _thread(
    thread_id: str, model: str, created: datetime, updated: datetime, entries: int = 0
) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "max_context_tokens": 200_000,
        "response_reserve_tokens": 16_000,
        "model": model,
        "summary_model": "",
        "created_at": created,
        "updated_at": updated,
        "compaction_strategy": 0,
        "open_entries": 0,
        "open_turns": 0,
        "completed_entries": entries,
        "dynamic_context_placement": 0,
    }


def _usage(
    thread_id: str, turn_id: str, event_id: int, at: datetime, cause: int, model: str, n: int
) -> dict[str, Any]:
    history_tokens = 2_000 + 90 * n
    read = 0 if cause else history_tokens
    entries: list[str] = []
    if cause in (H.PREFIX_BREAK_CAUSE_SUMMARY, H.PREFIX_BREAK_CAUSE_TURN_CAP):
        entries = [f"e-{k:04d}" for k in range(max(1, n - 120), n - 20)]
    elif cause == H.PREFIX_BREAK_CAUSE_CLEARING:
        entries = [f"r-{k:04d}" for k in range(n - 30, n - 20, 2)]
    detail = "soul_core" if cause == H.PREFIX_BREAK_CAUSE_SECTION else (entries[0] if entries else "")
    return {
        "thread_id": thread_id,
        "turn_id": turn_id,
        "manifest_event_id": event_id,
        "turn_message_count": 3,
        "provider": 1,
        "model": model,
        "input_tokens": history_tokens + 3_000,
        "cache_read_input_tokens": read,
        "cache_write_input_tokens": 0 if read else history_tokens,
        "output_tokens": 120,
        "reasoning_output_tokens": None,
        "expected_input_tokens": history_tokens + 3_000,
        "expected_cache_read_input_tokens": read,
        "expected_cache_write_input_tokens": 0 if read else history_tokens,
        "expected_input_cost_usd": round((history_tokens + 3_000) * 3e-6, 6),
        "reported_input_cost_usd": round((history_tokens + 3_000) * 3e-6, 6),
        "break_cause": cause,
        "break_detail": detail,
        "break_tokens_invalidated": history_tokens if cause else 0,
        "break_tokens_kept": 0,
        "reported_at": at,
        "break_entry_ids": json.dumps(entries[:100]) if entries else "",
        "break_entry_count": len(entries),
        "history_decision": H.HISTORY_DECISION_SUMMARIZED
        if cause == H.PREFIX_BREAK_CAUSE_SUMMARY
        else H.HISTORY_DECISION_FULL,
    }


@dataclass
class Seeded:
    threads: int
    long_thread: str
    turns: int
    breaks: list[tuple[int, int]] = field(default_factory=list)


async def _insert(engine: AsyncEngine, table: Any, rows: list[dict[str, Any]]) -> None:
    async with engine.begin() as conn:
        for at in range(0, len(rows), CHUNK):
            await conn.execute(insert(table), rows[at : at + CHUNK])


async def seed_threads(engine: AsyncEngine, count: int, *, with_breaks_every: int = 7) -> list[str]:
    """`count` threads, most recently updated last, every `with_breaks_every`th with a round whose
    prefix broke (and every thread one round that held): for ListThreads' filters."""
    ids = [f"thread-{i:06d}-{MODELS[i % 3].split('-')[0]}" for i in range(count)]
    threads = [
        _thread(tid, MODELS[i % 3], START + timedelta(seconds=i), START + timedelta(seconds=2 * i))
        for i, tid in enumerate(ids)
    ]
    usage = [
        _usage(
            tid,
            "turn-1",
            0,
            START,
            H.PREFIX_BREAK_CAUSE_SECTION if i % with_breaks_every == 0 else 0,
            MODELS[i % 3],
            1,
        )
        for i, tid in enumerate(ids)
    ]
    await _insert(engine, ThreadRow, threads)
    await _insert(engine, RoundUsageRow, usage)
    return ids


async def seed_console(engine: AsyncEngine, threads: int = 2_000, turns: int = 1_000) -> Seeded:
    """`threads` threads in all (SQLite), one of them LONG_THREAD with `turns` turns, a manifest
    event and a reported round each, and the 20 breaks of BREAKS (their section texts kept)."""
    await seed_threads(engine, threads - 1)
    # The long thread was made half way: a thousand threads are newer.
    made = START + timedelta(seconds=(threads - 1) // 2)
    last = made + timedelta(seconds=30 * turns)
    model = MODELS[0]
    thread = _thread(LONG_THREAD, model, made, last, entries=4 * turns)
    causes = dict(BREAKS)
    turn_rows, events, usage = [], [], []
    texts: dict[str, str] = {fingerprint(IDENTITY): IDENTITY, fingerprint(TOOLS): TOOLS}
    version = 0
    for n in range(1, turns + 1):
        turn_id = f"turn-{n:04d}"
        at = made + timedelta(seconds=30 * n)
        cause = causes.get(n, 0)
        if cause == H.PREFIX_BREAK_CAUSE_SECTION:
            version += 1
        if cause == H.PREFIX_BREAK_CAUSE_MODEL:
            model = MODELS[0] if model != MODELS[0] else "claude-opus-4-1"
        manifest = _manifest(LONG_THREAD, turn_id, version, n)
        for text in (soul(version), f"## Context\nTurn {n} of the incident."):
            texts[fingerprint(text)] = text
        event_id = n
        turn_rows.append(
            {
                "thread_id": LONG_THREAD,
                "turn_id": turn_id,
                "status": H.TURN_STATUS_COMPLETED,
                "created_at": at,
                "updated_at": at + timedelta(seconds=5),
                "prompt_manifest_json": manifest_json(manifest),
                "prompt_compiler_version": manifest.compiler_version,
                "prompt_profile": "full",
                "prompt_fingerprint_stable": manifest.fingerprint_stable,
                "prompt_fingerprint_dynamic": manifest.fingerprint_dynamic,
                "prompt_fingerprint_full": manifest.fingerprint_full,
                "manifest_event_id": event_id,
            }
        )
        events.append(
            {
                "id": event_id,
                "thread_id": LONG_THREAD,
                "turn_id": turn_id,
                "manifest_pb": manifest.SerializeToString(deterministic=True),
                "created_at": at,
            }
        )
        usage.append(_usage(LONG_THREAD, turn_id, event_id, at + timedelta(seconds=2), cause, model, n))
    await _insert(engine, ThreadRow, [thread])
    await _insert(engine, TurnRow, turn_rows)
    await _insert(engine, ManifestEventRow, events)
    await _insert(engine, RoundUsageRow, usage)
    created = START
    await _insert(
        engine,
        SectionTextRow,
        [
            {"thread_id": LONG_THREAD, "fingerprint": f, "text": t, "created_at": created}
            for f, t in texts.items()
        ],
    )
    return Seeded(threads, LONG_THREAD, turns, list(BREAKS))
