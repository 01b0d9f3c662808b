"""A thread's copy: read, written elsewhere, forked at a turn, on every store."""

from __future__ import annotations

from typing import Any

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import AlreadyExists, FailedPrecondition, NotFound
from pioneer_grpc.store.copy_port import Fork, ThreadCopy
from pioneer_grpc.store.port import Conflict, HistoryAsk, HistoryRead, KeptCounts, Store, SummaryToStore
from pioneer_grpc.v1 import chat_pb2, history_pb2
from tests.store.contract.rows import CL100K, O200K, answer, batch, call, config, result, turn, user

PNG = bytes(range(256)) * 4


def _with_image(entry: history_pb2.ConversationEntry) -> history_pb2.ConversationEntry:
    entry.content_parts.add(image=chat_pb2.MediaPart(mime_type="image/png", data=PNG))
    entry.content_parts.add(text="what is in it?")
    return entry


async def _thread(store: Store, thread_id: str = "t") -> None:
    """Three completed turns (an image, a call id reused across turns, a failed result, reasoning),
    a summary through the first, counts in a second tokenizer, and an open fourth turn."""
    await store.threads.create(thread_id, config(keep_tool_results=2, compaction_trigger_percent=70))
    await turn(store, thread_id, "u1", _with_image(user("q1", "u1")), answer("a1", "u1"))
    failed = result("r2", "u2", "k1")
    failed.is_error = True
    reasoned = call("c2", "u2", "k1")
    reasoned.reasoning_content = "look at the file first"
    await turn(store, thread_id, "u2", user("q2", "u2"), reasoned, failed, answer("a2", "u2"))
    await turn(store, thread_id, "u3", user("q3", "u3"), call("c3", "u3", "k1"), result("r3", "u3", "k1"))
    read = await store.history.read(HistoryAsk(thread_id))
    first_turn = read.whole.entries[1] if read.whole else None
    assert first_turn is not None and first_turn.entry_id == "a1"
    await store.history.store_summary(
        thread_id,
        SummaryToStore("the user showed a picture", 9, CL100K, "a1", first_turn.sequence, "m", "test"),
        "",
    )
    after = await store.history.read(HistoryAsk(thread_id))
    assert after.whole is not None and after.whole.summary is not None
    await store.history.keep_counts(
        KeptCounts(
            O200K,
            {e.sequence: 3 + i for i, e in enumerate(after.whole.entries)},
            (after.whole.summary.summary_id, 8),
        )
    )
    await store.entries.append(batch(thread_id, user("q4", "u4")))


def _plain(read: HistoryRead) -> Any:
    """A read with what is local to a database (sequences, summary ids) left out."""
    whole = read.whole
    assert whole is not None
    entries = []
    for entry in whole.entries:
        copied = history_pb2.ConversationEntry()
        copied.CopyFrom(entry)
        copied.ClearField("sequence")
        entries.append(copied.SerializeToString(deterministic=True))
    summary = None
    if whole.summary is not None:
        s = whole.summary
        summary = (s.text, s.token_count, s.tokenizer, s.covers_through_entry_id, s.summarizer, s.model)
    state = read.state
    return (
        entries,
        summary,
        whole.more,
        whole.tokenizer,
        read.left_out,
        state.completed_count,
        state.model,
        state.keep_tool_results,
        state.compaction_trigger_percent,
        state.compaction_failed_sequence is None,
    )


def _copy_plain(copy: ThreadCopy) -> Any:
    entries = []
    for copied in copy.entries:
        entry = history_pb2.ConversationEntry()
        entry.CopyFrom(copied.entry)
        entry.ClearField("sequence")
        entries.append(
            (entry.SerializeToString(deterministic=True), copied.content_hash, dict(copied.counts))
        )
    summaries = []
    for copied_summary in copy.summaries:
        s = history_pb2.ThreadSummary()
        s.CopyFrom(copied_summary.summary)
        s.ClearField("covers_through_sequence")
        s.ClearField("thread_id")
        summaries.append(
            (s.SerializeToString(deterministic=True), copied_summary.tokenizer, dict(copied_summary.counts))
        )
    return (
        copy.config.SerializeToString(deterministic=True),
        copy.created_at,
        copy.compaction_failed_entry_id,
        list(copy.turns),
        entries,
        summaries,
    )


async def test_a_copy_written_elsewhere_reads_and_loads_as_its_source(store: Store) -> None:
    await _thread(store)
    await store.history.mark_compaction_failed(
        "t", (await store.history.read(HistoryAsk("t"))).state.completed_max_id or 0
    )
    copy = await store.copies.read("t")
    assert [t.turn_id for t in copy.turns] == ["u1", "u2", "u3", "u4"]
    assert [e.entry.entry_id for e in copy.entries][-1] == "q4" and not copy.entries[-1].entry.completed
    assert copy.entries[0].entry.content_parts[0].image.data == PNG
    assert copy.compaction_failed_entry_id == "r3"
    written = await store.copies.write("copy", copy)
    assert (written.turn_count, written.summary_count) == (4, 1)
    thread = written.thread
    assert thread.entry_count == 10 and thread.config == copy.config
    assert thread.create_time.ToDatetime() == copy.created_at.replace(tzinfo=None)
    assert _copy_plain(await store.copies.read("copy")) == _copy_plain(copy)
    for tokenizer_model in ("", "gpt-4o"):
        if tokenizer_model:
            for thread_id in ("t", "copy"):
                current = (await store.threads.get(thread_id)).config
                moved = history_pb2.ThreadConfig()
                moved.CopyFrom(current)
                moved.model = tokenizer_model
                await store.threads.update(thread_id, moved, current)
        for exclude in ("", "u3"):
            source = await store.history.read(HistoryAsk("t", exclude))
            written = await store.history.read(HistoryAsk("copy", exclude))
            assert _plain(written) == _plain(source)
    # The reused call id is the thread's: an append of its result to the copy is checked as in the source.
    assert await store.entries.stored_calls("copy", [result("r9", "u3", "k1")]) is not None


async def test_a_taken_id_refuses_the_copy_and_keeps_what_it_holds(store: Store) -> None:
    await _thread(store)
    await store.threads.create("taken", config())
    await turn(store, "taken", "x1", user("x", "x1"))
    with pytest.raises(AlreadyExists) as taken:
        await store.copies.write("taken", await store.copies.read("t"))
    assert taken.value.reason == reasons.THREAD_EXISTS
    assert (await store.threads.get("taken")).entry_count == 1
    with pytest.raises(NotFound) as missing:
        await store.copies.read("nobody")
    assert missing.value.reason == reasons.THREAD_NOT_FOUND


async def test_a_fork_holds_the_source_through_its_turn_as_a_load_read_it_then(store: Store) -> None:
    await store.threads.create("t", config(keep_tool_results=2))
    await turn(store, "t", "u1", _with_image(user("q1", "u1")), answer("a1", "u1"))
    await turn(store, "t", "u2", user("q2", "u2"), call("c2", "u2", "k1"), result("r2", "u2", "k1"))
    at_u2 = await store.history.read(HistoryAsk("t", "u3"))
    assert at_u2.whole is not None
    await store.history.store_summary(
        "t", SummaryToStore("so far", 4, CL100K, "a1", at_u2.whole.entries[1].sequence, "m", "test"), ""
    )
    at_u2 = await store.history.read(HistoryAsk("t", "u3"))
    await turn(store, "t", "u3", user("q3", "u3"), call("c3", "u3", "k1"), result("r3", "u3", "k1"))
    # A summary covering past the fork's turn stays out: the fork's newest is the one of u2.
    later = await store.history.read(HistoryAsk("t"))
    assert later.whole is not None and later.whole.summary is not None
    await store.history.store_summary(
        "t", SummaryToStore("past u2", 4, CL100K, "r3", later.whole.entries[-1].sequence, "m", "test"), ""
    )
    await store.entries.append(batch("t", user("q4", "u4")))
    source_before = _copy_plain(await store.copies.read("t"))
    source = (await store.threads.get("t")).config
    other = history_pb2.ThreadConfig()
    other.CopyFrom(source)
    other.summary_model = "another"
    forked = await store.copies.fork(Fork("t", "u2", "f", other, source))
    assert not isinstance(forked, Conflict)
    assert forked.thread.entry_count == 5 and forked.thread.config.summary_model == "another"
    assert (forked.turn_count, forked.summary_count) == (2, 1)
    fork_copy = await store.copies.read("f")
    assert [t.turn_id for t in fork_copy.turns] == ["u1", "u2"]
    assert [s.summary.text for s in fork_copy.summaries] == ["so far"]
    fork_read = await store.history.read(HistoryAsk("f", "u3"))
    # Only the summary model differs from the source as u2 left it.
    assert _plain(fork_read)[:6] == _plain(at_u2)[:6]
    assert _copy_plain(await store.copies.read("t")) == source_before


async def test_a_fork_refuses_what_it_cannot_copy_and_writes_nothing(store: Store) -> None:
    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("q1", "u1"), answer("a1", "u1"))
    await store.entries.append(batch("t", user("q2", "u2")))
    await store.threads.create("taken", config())
    source = (await store.threads.get("t")).config
    cases: list[tuple[Fork, type[Exception], str]] = [
        (Fork("nobody", "u1", "f", source, source), NotFound, reasons.THREAD_NOT_FOUND),
        (Fork("t", "u9", "f", source, source), NotFound, reasons.TURN_NOT_FOUND),
        (Fork("t", "u2", "f", source, source), FailedPrecondition, reasons.TURN_NOT_COMPLETED),
        (Fork("t", "u1", "taken", source, source), AlreadyExists, reasons.THREAD_EXISTS),
    ]
    for fork, kind, reason in cases:
        with pytest.raises(kind) as refused:
            await store.copies.fork(fork)
        assert refused.value.reason == reason  # type: ignore[attr-defined]
    stale = history_pb2.ThreadConfig()
    stale.CopyFrom(source)
    stale.max_context_tokens += 1
    assert isinstance(await store.copies.fork(Fork("t", "u1", "f", source, stale)), Conflict)
    with pytest.raises(NotFound):
        await store.threads.get("f")
    assert (await store.threads.get("taken")).entry_count == 0
