"""Counts are stored per tokenizer: a thread that moves to another model family is recounted once, lazily."""

from __future__ import annotations

from google.protobuf import field_mask_pb2
from sqlalchemy import text

from pioneer_grpc.history import tokens
from pioneer_grpc.history.render import entry_counted_texts, summary_text
from pioneer_grpc.v1 import history_pb2, turn_service_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import ASSISTANT, config, create, entry, load, turn

TEXTS = [
    "Сервер считает токены один раз, при добавлении записи, и хранит результат.",
    "服务器在追加条目时只计算一次令牌数并保存。",
    "def fit(entries): return [e.token_count for e in entries if e.completed]",
]


def _entries() -> list[history_pb2.ConversationEntry]:
    found = []
    for i, content in enumerate(TEXTS):
        found += [
            entry(f"u{i}", f"turn-{i}", content=content),
            entry(f"a{i}", f"turn-{i}", ASSISTANT, content=content[::-1]),
        ]
    return found


def _cost(entries: list[history_pb2.ConversationEntry], tokenizer: str) -> int:
    return sum(
        sum(tokens.count_blocking(entry_counted_texts(e), tokenizer)) + tokens.MESSAGE_OVERHEAD
        for e in entries
    )


async def _fill(history, thread_id: str) -> None:
    entries = _entries()
    for i in range(len(TEXTS)):
        await turn(history, thread_id, f"turn-{i}", *entries[2 * i : 2 * i + 2])


async def _switch(history, thread_id: str, model: str) -> None:
    await history.update_thread(
        pb.UpdateThreadRequest(
            thread_id=thread_id,
            config=config(model=model),
            update_mask=field_mask_pb2.FieldMask(paths=["model"]),
        )
    )


async def _stored(server, thread_id: str) -> list[tuple[str, str, int]]:
    """(entry_id, tokenizer, count) of the counts stored beside the append counts."""
    query = text(
        "SELECT e.entry_id, c.tokenizer, c.token_count FROM entry_token_counts c "
        "JOIN conversation_entries e ON e.id = c.entry_sequence WHERE e.thread_id = :t "
        "ORDER BY e.id, c.tokenizer"
    )
    async with server.ctx.store.engine.connect() as conn:
        return [tuple(row) for row in await conn.execute(query, {"t": thread_id})]


async def test_a_switch_to_claude_recounts_once_on_load_and_a_switch_back_reuses_the_append_counts(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(model="gpt-4.1"))
    await _fill(history, "t")
    assert (await load(history, "t")).report.tokens_before == _cost(_entries(), "o200k_base")

    await _switch(history, "t", "claude-sonnet-4-5")
    assert await _stored(pg_server, "t") == []  # nothing is recounted by the switch itself
    after = (await load(history, "t")).report
    assert (after.tokenizer, after.token_counts_exact) == ("claude_estimate", False)
    assert after.tokens_before == _cost(_entries(), "claude_estimate") != _cost(_entries(), "o200k_base")
    stored = await _stored(pg_server, "t")
    expected = [
        (e.entry_id, "claude_estimate", sum(tokens.count_blocking(entry_counted_texts(e), "claude_estimate")))
        for e in _entries()
    ]
    assert stored == expected

    # Later loads read the stored counts: make them recognisable, change the history, load again.
    async with pg_server.ctx.store.engine.begin() as conn:
        await conn.execute(text("UPDATE entry_token_counts SET token_count = token_count + 1000"))
    new = entry("u-new", "turn-new", content="one more")
    await turn(history, "t", "turn-new", new)
    # The kept history is brought current with the new turn alone: nothing else is read again.
    extended = (await load(history, "t")).report
    assert extended.tokens_before == after.tokens_before + _cost([new], "claude_estimate")
    pg_server.ctx.load_cache.clear()  # read whole again: the stored counts
    again = (await load(history, "t")).report
    assert again.tokens_before == after.tokens_before + 1000 * len(expected) + _cost([new], "claude_estimate")
    assert len(await _stored(pg_server, "t")) == len(expected)  # the new entry was appended in Claude's count

    # Back to OpenAI: the append counts serve; only the entry appended under Claude is counted, once.
    await _switch(history, "t", "gpt-4.1")
    back = (await load(history, "t")).report
    assert back.tokens_before == _cost([*_entries(), new], "o200k_base")
    stored = await _stored(pg_server, "t")
    assert [row for row in stored if row[1] == "o200k_base"] == [
        ("u-new", "o200k_base", sum(tokens.count_blocking(entry_counted_texts(new), "o200k_base")))
    ]
    assert len(stored) == len(expected) + 1


async def test_a_round_after_a_switch_stores_the_counts_it_makes_as_a_load_does(pg_server):
    history = await pg_server.client()
    await create(history, "t", config(model="gpt-4o"))
    await _fill(history, "t")
    await _switch(history, "t", "gemini-2.5-pro")
    reply = await history.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t",
            turn_id="turn-next",
            new_entries=[
                history_pb2.ConversationEntry(
                    entry_id="u-next", role=history_pb2.ENTRY_ROLE_USER, content="go"
                )
            ],
        )
    )
    assert reply.history_report.tokenizer == "gemini_estimate"
    assert reply.history_report.tokens_before == _cost(_entries(), "gemini_estimate")
    stored = await _stored(pg_server, "t")
    assert {(entry_id, tokenizer) for entry_id, tokenizer, _ in stored} == {
        (e.entry_id, "gemini_estimate") for e in _entries()
    }
    # A load now reads them: the same budget, nothing stored twice.
    assert (
        await load(history, "t", exclude="turn-next")
    ).report.tokens_before == reply.history_report.tokens_before
    assert len(await _stored(pg_server, "t")) == len(stored)


async def test_a_summary_stored_without_its_tokenizer_is_counted_once_per_tokenizer(pg_server):
    """Summaries stored before their tokenizer was recorded ("") are counted like stale entries."""
    history = await pg_server.client()
    await create(history, "t", config(model="gpt-4o"))
    await _fill(history, "t")
    summary = "The user asked about counting tokens once; the server stores counts."
    async with pg_server.ctx.store.engine.begin() as conn:
        covered = (
            await conn.execute(
                text("SELECT id FROM conversation_entries WHERE entry_id = 'a0' AND thread_id = 't'")
            )
        ).scalar_one()
        await conn.execute(
            text(
                "INSERT INTO thread_summaries (thread_id, text, covers_through_sequence, "
                "covers_through_entry_id, token_count, model, summarizer, created_at) "
                "VALUES ('t', :text, :seq, 'a0', 1, '', 'old', CURRENT_TIMESTAMP)"
            ),
            {"text": summary, "seq": covered},
        )

    def summary_cost(tokenizer: str) -> int:
        [count] = tokens.count_blocking([summary_text(summary)], tokenizer)
        return count + tokens.MESSAGE_OVERHEAD

    async def summary_counts() -> list[tuple[str, int]]:
        async with pg_server.ctx.store.engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT tokenizer, token_count FROM summary_token_counts ORDER BY tokenizer")
            )
            return [tuple(row) for row in rows]

    report = (await load(history, "t")).report
    assert report.tokens_before == summary_cost("o200k_base") + _cost(_entries()[2:], "o200k_base")
    assert await summary_counts() == [("o200k_base", summary_cost("o200k_base") - tokens.MESSAGE_OVERHEAD)]
    await _switch(history, "t", "claude-haiku-4-5")
    report = (await load(history, "t")).report
    assert report.tokens_before == summary_cost("claude_estimate") + _cost(_entries()[2:], "claude_estimate")
    assert [t for t, _ in await summary_counts()] == ["claude_estimate", "o200k_base"]
