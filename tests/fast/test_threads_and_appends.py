"""Threads, appends and completions as use cases (service/history.py), on the in-memory store."""

from __future__ import annotations

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from pioneer_grpc.service import history
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.v1 import history_pb2
from tests.fast.conftest import Crossings
from tests.store.contract.rows import answer, call, result, user


def _config(model: str = "claude-sonnet-4-5", **fields: int) -> history_pb2.ThreadConfig:
    return history_pb2.ThreadConfig(model=model, **fields)


async def test_a_thread_gets_its_models_budget_and_a_retry_is_the_same_thread(ctx: ServiceContext) -> None:
    thread = await history.create_thread(ctx, "t", _config("gpt-4o"))
    info = ctx.models.lookup("gpt-4o")
    assert info is not None
    assert thread.config.max_context_tokens == info.context_window
    assert thread.config.response_reserve_tokens == info.response_reserve
    assert await history.create_thread(ctx, "t", _config("gpt-4o")) == thread
    with pytest.raises(AlreadyExists):
        await history.create_thread(ctx, "t", _config("gpt-4o", max_context_tokens=100_000))
    generated = await history.create_thread(ctx, "", _config())
    assert generated.thread_id.startswith("thr_")


async def test_bad_settings_are_refused_naming_each_field(ctx: ServiceContext) -> None:
    with pytest.raises(InvalidArgument) as refused:
        await history.create_thread(ctx, "t", _config(max_context_tokens=1000, response_reserve_tokens=2000))
    assert refused.value.violations
    with pytest.raises(NotFound):
        await history.get_thread(ctx, "t")


async def test_an_update_sets_the_masked_fields_and_unset_ones_go_back_to_the_models_default(
    ctx: ServiceContext,
) -> None:
    await history.create_thread(ctx, "t", _config("gpt-4o", max_context_tokens=90_000, keep_tool_results=2))
    updated = await history.update_thread(
        ctx, "t", _config("claude-sonnet-4-5"), ["model", "max_context_tokens"]
    )
    info = ctx.models.lookup("claude-sonnet-4-5")
    assert info is not None
    assert updated.config.model == "claude-sonnet-4-5"
    assert updated.config.max_context_tokens == info.context_window  # masked, unset: the new model's
    assert updated.config.keep_tool_results == 2  # not masked: kept
    cleared = await history.update_thread(ctx, "t", history_pb2.ThreadConfig(), ["keep_tool_results"])
    assert not cleared.config.HasField("keep_tool_results")
    with pytest.raises(InvalidArgument):
        await history.update_thread(ctx, "t", _config(), ["nonsense"])


async def test_an_update_made_from_a_stale_read_reads_again(ctx: ServiceContext, monkeypatch) -> None:
    """Two updates at once: the one whose read went stale reads the thread again, so neither's
    change is lost."""
    await history.create_thread(ctx, "t", _config("gpt-4o"))
    get = ctx.store.threads.get
    interleaved: list[str] = []

    async def get_then_another_update(thread_id: str) -> history_pb2.Thread:
        found = await get(thread_id)
        if not interleaved:
            interleaved.append("summary_model")
            await ctx.store.threads.update(
                thread_id,
                history_pb2.ThreadConfig(**{**_fields(found.config), "summary_model": "s"}),
                found.config,
            )
        return found

    monkeypatch.setattr(ctx.store.threads, "get", get_then_another_update)
    updated = await history.update_thread(ctx, "t", _config(compaction_strategy=3), ["compaction_strategy"])
    assert (updated.config.compaction_strategy, updated.config.summary_model) == (3, "s")


def _fields(config: history_pb2.ThreadConfig) -> dict[str, object]:
    return {field.name: value for field, value in config.ListFields()}


async def test_an_append_stores_counts_and_repeats_nothing(ctx: ServiceContext, crossings: Crossings) -> None:
    await history.create_thread(ctx, "t", _config())
    crossings.clear()
    first = await history.append_entries(
        ctx, "t", [user("e1", "u1", "What is in a.txt?"), call("e2", "u1", "c1")]
    )
    assert (first.created_count, first.existing_count) == (2, 0)
    assert [e.token_count > 0 for e in first.entries] == [True, True]
    assert crossings.calls == ["entries.append"]  # one crossing: checks and counts before it
    again = await history.append_entries(ctx, "t", [user("e1", "u1", "What is in a.txt?")])
    assert (again.created_count, again.existing_count) == (0, 1)


async def test_an_append_refuses_whole_and_names_every_violation(ctx: ServiceContext) -> None:
    await history.create_thread(ctx, "t", _config())
    empty = history_pb2.ConversationEntry(entry_id="e0", turn_id="u1", role=history_pb2.ENTRY_ROLE_USER)
    with pytest.raises(InvalidArgument) as refused:
        await history.append_entries(ctx, "t", [empty, result("e2", "u1", "c404")])
    fields = [v.field for v in refused.value.violations]
    assert "entries[0].content" in fields and "entries[1].tool_call_id" in fields
    assert (await history.get_thread(ctx, "t")).entry_count == 0
    await history.append_entries(ctx, "t", [user("e1", "u1", "hi")])
    with pytest.raises(AlreadyExists):
        await history.append_entries(ctx, "t", [user("e1", "u1", "other text")])


async def test_entries_are_counted_again_in_the_threads_tokenizer_when_the_guess_was_another(
    ctx: ServiceContext, crossings: Crossings
) -> None:
    # Made elsewhere (another worker, before a restart): this server has not seen its model.
    thread = history_pb2.ThreadConfig(
        model="gpt-4o", max_context_tokens=128_000, response_reserve_tokens=16_000
    )
    await ctx.store.threads.create("t", thread)  # o200k_base
    crossings.clear()
    outcome = await history.append_entries(ctx, "t", [user("e1", "u1", "hello there")])
    assert outcome.entries[0].tokenizer == "o200k_base"
    assert crossings.calls == ["entries.append", "entries.append"]  # counted again, once
    crossings.clear()
    await history.append_entries(ctx, "t", [user("e2", "u2", "and again")])
    assert crossings.calls == ["entries.append"]  # the thread's model is known now


async def test_a_turn_completes_with_or_without_its_last_entries(ctx: ServiceContext) -> None:
    await history.create_thread(ctx, "t", _config())
    await history.append_entries(ctx, "t", [user("e1", "u1")])
    done = await history.complete_turn(ctx, "t", "u1", [answer("e2", "")])
    assert (done.completed_entry_count, done.created_count) == (2, 1)
    with pytest.raises(FailedPrecondition) as refused:
        await history.append_entries(ctx, "t", [user("e3", "u1")])
    assert refused.value.reason == reasons.TURN_COMPLETED
    await history.append_entries(ctx, "t", [user("e4", "u2")])
    assert (await history.complete_turn(ctx, "t", "u2")).completed_entry_count == 1
    with pytest.raises(NotFound):
        await history.complete_turn(ctx, "t", "u9")
    with pytest.raises(InvalidArgument):
        await history.complete_turn(ctx, "t", "u3", [user("e5", "other")])


async def test_counts_of_texts_and_messages(ctx: ServiceContext) -> None:
    from pioneer_grpc.v1 import chat_pb2

    message = chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content="hello world")
    counted = await history.count_tokens_of(ctx, ["hello world"], [message], "gpt-4o")
    assert counted.tokenizer == "o200k_base" and counted.exact
    assert counted.counts[1] == counted.counts[0] + 4  # a message's overhead
