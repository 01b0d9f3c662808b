"""CreateThread, GetThread, UpdateThread end to end with the Python client, on SQLite and PostgreSQL."""

from __future__ import annotations

import grpc
from google.protobuf import field_mask_pb2

from pioneer_grpc.v1 import chat_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import config, entry, failure


async def test_create_with_defaults_then_get(pg_server):
    history = await pg_server.client()
    thread = (await history.create_thread(thread_id="t-1", config=config(model="gpt-x"))).thread
    assert thread.thread_id == "t-1"
    assert (thread.config.max_context_tokens, thread.config.response_reserve_tokens) == (128_000, 16_000)
    assert thread.config.model == "gpt-x"
    assert thread.config.summary_model == ""
    await history.append_entries(thread_id="t-1", entries=[entry("e1", "turn-1"), entry("e2", "turn-1")])
    await history.complete_turn(thread_id="t-1", turn_id="turn-1")
    got = (await history.get_thread(thread_id="t-1")).thread
    assert got.entry_count == 2
    assert got.create_time == thread.create_time
    assert got.update_time.ToDatetime() >= thread.update_time.ToDatetime()


async def test_server_generated_ids_are_unique(pg_server):
    history = await pg_server.client()
    first = (await history.create_thread(thread_id="")).thread
    second = (await history.create_thread(thread_id="")).thread
    assert first.thread_id.startswith("thr_")
    assert first.thread_id != second.thread_id


async def test_duplicate_id_is_already_exists_and_keeps_the_original(pg_server):
    history = await pg_server.client()
    await history.create_thread(thread_id="dup", config=config(model="first"))
    error = await failure(history.create_thread(thread_id="dup", config=config(model="second")))
    assert error.code == grpc.StatusCode.ALREADY_EXISTS
    assert "dup" in error.message
    got = (await history.get_thread(thread_id="dup")).thread
    assert got.config.model == "first"


async def test_bad_budgets_are_invalid_argument_with_field_violations(pg_server):
    history = await pg_server.client()
    error = await failure(history.create_thread(thread_id="bad", config=config(1000, 1000)))
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.violations == [
        ("config.response_reserve_tokens", "must be below max_context_tokens (1000), got 1000")
    ]
    error = await failure(history.create_thread(thread_id="bad", config=config(0, -1)))
    assert [field for field, _ in error.violations] == [
        "config.max_context_tokens",
        "config.response_reserve_tokens",
    ]
    assert (await failure(history.get_thread(thread_id="bad"))).code == grpc.StatusCode.NOT_FOUND


async def test_unknown_thread_is_not_found(pg_server):
    error = await failure((await pg_server.client()).get_thread(thread_id="nope"))
    assert error.code == grpc.StatusCode.NOT_FOUND
    assert error.message == "thread 'nope' does not exist"


async def test_update_with_a_mask_touches_only_the_named_fields(pg_server):
    history = await pg_server.client()
    await history.create_thread(thread_id="u", config=config(50_000, 5_000, model="m1", summary_model="s1"))
    response = await history.update_thread(
        pb.UpdateThreadRequest(
            thread_id="u",
            config=config(60_000, 9_999, model="m2"),
            update_mask=field_mask_pb2.FieldMask(paths=["max_context_tokens", "summary_model"]),
        )
    )
    cfg = response.thread.config
    # reserve and model are not in the mask; summary_model is, and unset clears it.
    assert (cfg.max_context_tokens, cfg.response_reserve_tokens, cfg.model, cfg.summary_model) == (
        60_000,
        5_000,
        "m1",
        "",
    )


async def test_update_with_an_empty_mask_takes_every_set_field(pg_server):
    history = await pg_server.client()
    await history.create_thread(thread_id="u", config=config(50_000, 5_000, model="m1", summary_model="s1"))
    response = await history.update_thread(
        pb.UpdateThreadRequest(thread_id="u", config=config(reserve=7_000))
    )
    cfg = response.thread.config
    assert (cfg.max_context_tokens, cfg.response_reserve_tokens, cfg.model, cfg.summary_model) == (
        50_000,
        7_000,
        "m1",
        "s1",
    )


async def test_update_rejects_a_merged_budget_that_is_invalid_and_changes_nothing(pg_server):
    history = await pg_server.client()
    await history.create_thread(thread_id="u", config=config(50_000, 5_000))
    error = await failure(
        history.update_thread(pb.UpdateThreadRequest(thread_id="u", config=config(reserve=50_000)))
    )
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.violations == [
        ("config.response_reserve_tokens", "must be below max_context_tokens (50000), got 50000")
    ]
    error = await failure(
        history.update_thread(
            pb.UpdateThreadRequest(
                thread_id="u",
                config=config(),
                update_mask=field_mask_pb2.FieldMask(paths=["model", "colour"]),
            )
        )
    )
    assert error.violations == [
        (
            "update_mask.paths[1]",
            "unknown path 'colour'; use max_context_tokens, response_reserve_tokens, model, summary_model, "
            "compaction_strategy, keep_tool_results, compaction_trigger_percent, "
            "compaction_low_water_percent, clear_at_least_percent, dynamic_context_placement, "
            "retention_days",
        )
    ]
    cfg = (await history.get_thread(thread_id="u")).thread.config
    assert (cfg.max_context_tokens, cfg.response_reserve_tokens) == (50_000, 5_000)
    missing = await failure(
        history.update_thread(pb.UpdateThreadRequest(thread_id="x", config=config(reserve=1)))
    )
    assert missing.code == grpc.StatusCode.NOT_FOUND


async def test_a_known_model_takes_its_window_and_reserve_from_the_registry(pg_server):
    history = await pg_server.client()
    expected = {
        "gpt-4o-2024-08-06": (128_000, 16_000),  # reserve: an eighth of the window (< 16,384 output)
        "claude-sonnet-4-5-20250929": (200_000, 25_000),
        "gemini-2.5-pro": (1_048_576, 65_536),  # reserve: the whole maximum output
    }
    for i, (model, budget) in enumerate(expected.items()):
        thread = (await history.create_thread(thread_id=f"t-known-{i}", config=config(model=model))).thread
        assert (thread.config.max_context_tokens, thread.config.response_reserve_tokens) == budget, model
    # What the caller sets wins over the registry.
    thread = (
        await history.create_thread(
            thread_id="t-set", config=config(max_context=50_000, reserve=2_000, model="gemini-2.5-pro")
        )
    ).thread
    assert (thread.config.max_context_tokens, thread.config.response_reserve_tokens) == (50_000, 2_000)


async def test_clearing_a_budget_field_goes_back_to_the_models_default(pg_server):
    history = await pg_server.client()
    await history.create_thread(
        thread_id="t-clear", config=config(max_context=50_000, model="claude-haiku-4-5")
    )
    reply = await history.update_thread(
        pb.UpdateThreadRequest(
            thread_id="t-clear",
            config=config(),
            update_mask=field_mask_pb2.FieldMask(paths=["max_context_tokens"]),
        )
    )
    assert reply.thread.config.max_context_tokens == 200_000


async def test_compaction_marks_and_placement_are_kept_checked_and_reset(pg_server):
    history = await pg_server.client()
    marks = config(50_000, 5_000)
    marks.compaction_trigger_percent = 70
    marks.compaction_low_water_percent = 30
    marks.clear_at_least_percent = 15
    marks.dynamic_context_placement = chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION
    thread = (await history.create_thread(thread_id="t-marks", config=marks)).thread
    got = (await history.get_thread(thread_id="t-marks")).thread
    for stored in (thread.config, got.config):
        assert (
            stored.compaction_trigger_percent,
            stored.compaction_low_water_percent,
            stored.clear_at_least_percent,
            stored.dynamic_context_placement,
        ) == (70, 30, 15, chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION)
    # A low-water mark at or over the trigger, and a percent out of range, are refused.
    bad = config()
    bad.compaction_low_water_percent = 70
    bad.clear_at_least_percent = 101
    error = await failure(history.update_thread(pb.UpdateThreadRequest(thread_id="t-marks", config=bad)))
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.violations == [
        ("config.compaction_low_water_percent", "must be 0 to below the trigger (70), got 70"),
        ("config.clear_at_least_percent", "must be 0 to 100, got 101"),
    ]
    # Masked but unset: back to the defaults (unset on the thread).
    reply = await history.update_thread(
        pb.UpdateThreadRequest(
            thread_id="t-marks",
            config=config(),
            update_mask=field_mask_pb2.FieldMask(
                paths=["compaction_low_water_percent", "dynamic_context_placement"]
            ),
        )
    )
    assert not reply.thread.config.HasField("compaction_low_water_percent")
    assert reply.thread.config.compaction_trigger_percent == 70
    assert reply.thread.config.dynamic_context_placement == chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_UNSPECIFIED
