"""Counts in the thread model's tokenizer: appends, loads after a model change, CountTokens, the report."""

from __future__ import annotations

from google.protobuf import field_mask_pb2

from pioneer_grpc.history import tokens
from pioneer_grpc.history.render import entry_counted_texts
from pioneer_grpc.v1 import chat_pb2, history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import ASSISTANT, config, create, entry, load, turn

# Text whose o200k_base, cl100k_base and Claude-estimate counts all differ.
TEXTS = [
    "Сервер считает токены один раз, при добавлении записи, и хранит результат.",
    "服务器在追加条目时只计算一次令牌数并保存。",
    "def fit(entries): return [e.token_count for e in entries if e.completed]",
]


async def _fill(history, thread_id: str) -> None:
    for i, text in enumerate(TEXTS):
        await turn(
            history,
            thread_id,
            f"turn-{i}",
            entry(f"u{i}", f"turn-{i}", content=text),
            entry(f"a{i}", f"turn-{i}", ASSISTANT, content=text[::-1]),
        )


def _expected(tokenizer: str) -> int:
    total = 0
    for i, text in enumerate(TEXTS):
        for role, content in ((history_pb2.ENTRY_ROLE_USER, text), (ASSISTANT, text[::-1])):
            e = history_pb2.ConversationEntry(entry_id=f"x{i}", turn_id="t", role=role, content=content)
            total += sum(tokens.count_blocking(entry_counted_texts(e), tokenizer)) + tokens.MESSAGE_OVERHEAD
    return total


async def test_appends_count_in_the_models_tokenizer(pg_server):
    history = await pg_server.client()
    await create(history, "t-4o", config(model="gpt-4o"))
    await _fill(history, "t-4o")
    report = (await load(history, "t-4o")).report
    assert (report.tokenizer, report.token_counts_exact, report.model_known) == ("o200k_base", True, True)
    assert report.tokens_before == _expected("o200k_base") != _expected("cl100k_base")


async def test_a_thread_switched_to_claude_is_budgeted_in_claude_counts_counted_once(pg_server, monkeypatch):
    history = await pg_server.client()
    await create(history, "t-switch", config(model="gpt-4.1"))
    await _fill(history, "t-switch")
    before = (await load(history, "t-switch")).report
    assert before.tokens_before == _expected("o200k_base")
    await history.update_thread(
        pb.UpdateThreadRequest(
            thread_id="t-switch",
            config=config(model="claude-sonnet-4-5"),
            update_mask=field_mask_pb2.FieldMask(paths=["model"]),
        )
    )
    after = (await load(history, "t-switch")).report
    assert (after.tokenizer, after.token_counts_exact) == ("claude_estimate", False)
    assert after.tokens_before == _expected("claude_estimate") != before.tokens_before

    def refuse(texts, tokenizer=tokens.TOKENIZER):
        raise AssertionError("counted once, by the first load in the new tokenizer; later loads never count")

    monkeypatch.setattr(tokens, "count_blocking", refuse)
    again = (await load(history, "t-switch", exclude="no-such-turn")).report  # not the cached answer
    assert again.tokens_before == after.tokens_before
    # Appends after the switch count in the new tokenizer.
    monkeypatch.undo()
    await turn(history, "t-switch", "turn-new", entry("u-new", "turn-new", content="one more"))
    newest = await history.append_entries(
        pb.AppendEntriesRequest(
            thread_id="t-switch", entries=[entry("u-new", "turn-new", content="one more")]
        )
    )
    assert newest.entries[0].tokenizer == "claude_estimate"


async def test_an_unknown_model_keeps_the_defaults_and_says_so(pg_server):
    history = await pg_server.client()
    thread = await create(history, "t-unknown", config(model="llama-3-70b"))
    assert (thread.config.max_context_tokens, thread.config.response_reserve_tokens) == (128_000, 16_000)
    await _fill(history, "t-unknown")
    report = (await load(history, "t-unknown")).report
    assert (report.tokenizer, report.token_counts_exact, report.model_known) == ("cl100k_base", True, False)


async def test_count_tokens_answers_in_the_models_tokenizer(pg_server):
    history = await pg_server.client()
    message = chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content=TEXTS[0])
    answers = {}
    for model in ("", "gpt-4", "gpt-4o-mini", "claude-haiku-4-5", "gemini-2.5-flash"):
        reply = await history.count_tokens(
            pb.CountTokensRequest(texts=TEXTS, messages=[message], model=model)
        )
        answers[model] = reply
        assert reply.total_tokens == sum(reply.token_counts)
        assert len(reply.token_counts) == 4
    assert [(answers[m].tokenizer, answers[m].exact) for m in answers] == [
        ("cl100k_base", True),
        ("cl100k_base", True),
        ("o200k_base", True),
        ("claude_estimate", False),
        ("gemini_estimate", False),
    ]
    assert list(answers["gpt-4o-mini"].token_counts[:3]) == tokens.count_blocking(TEXTS, "o200k_base")
    assert list(answers[""].token_counts[:3]) == tokens.count_blocking(TEXTS, "cl100k_base")
    assert answers["gpt-4o-mini"].token_counts != answers[""].token_counts


async def test_appends_to_a_thread_nobody_loaded_count_again_only_when_its_model_is_new(
    pg_server, monkeypatch
):
    """Entries are counted before the store is asked in the tokenizer the thread's model was last seen
    with, and again only when that guess was wrong: the first append to a thread another server
    made, and the first after another server changed its model; not every append to a thread whose
    history nobody loaded. A thread this server made or changed is seen as it made it."""
    from pioneer_grpc.service import token_fit

    recounted: list[str] = []
    count = token_fit.count_blocking

    def recording(texts, tokenizer=tokens.TOKENIZER):
        recounted.append(tokenizer)
        return count(texts, tokenizer)

    monkeypatch.setattr(token_fit, "count_blocking", recording)
    history = await pg_server.client()
    await create(history, "t-guess", config(model="gpt-4o"))
    pg_server.ctx.seen_models = token_fit.SeenModels()  # as though another worker made the thread

    async def append(entry_id: str) -> history_pb2.ConversationEntry:
        found = await history.append_entries(
            pb.AppendEntriesRequest(
                thread_id="t-guess", entries=[entry(entry_id, "turn-1", content=TEXTS[0])]
            )
        )
        return found.entries[0]

    first = await append("e1")
    assert recounted == ["o200k_base"]  # the guess for a thread never seen: cl100k_base
    recounted.clear()
    assert [(await append(f"e{i}")).token_count for i in (2, 3)] == [first.token_count] * 2
    assert recounted == []  # counted before the store is asked, once each, in the thread's
    await history.update_thread(
        pb.UpdateThreadRequest(
            thread_id="t-guess",
            config=config(model="claude-sonnet-4-5"),
            update_mask=field_mask_pb2.FieldMask(paths=["model"]),
        )
    )
    switched = await append("e4")
    assert switched.tokenizer == "claude_estimate"
    await append("e5")
    assert recounted == []  # this server changed the model: it counted in the new one at once
    current = (await pg_server.ctx.store.threads.get("t-guess")).config
    back = history_pb2.ThreadConfig()
    back.CopyFrom(current)
    back.model = "gpt-4o"
    await pg_server.ctx.store.threads.update("t-guess", back, current)  # another server changes it back
    await append("e6")
    assert recounted == ["o200k_base"]
