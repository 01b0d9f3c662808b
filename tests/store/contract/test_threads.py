"""Threads: create (idempotent by config), get, update only from the config the caller read."""

from __future__ import annotations

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import AlreadyExists, NotFound
from pioneer_grpc.store.port import Conflict, Store
from tests.store.contract.rows import batch, config, user


async def test_a_thread_is_created_once_and_read_back(store: Store) -> None:
    created = await store.threads.create("t", config("gpt-4o", keep_tool_results=3))
    assert created.thread_id == "t"
    assert created.config.model == "gpt-4o" and created.config.keep_tool_results == 3
    assert created.entry_count == 0
    assert created.create_time == created.update_time
    assert await store.threads.get("t") == created
    assert await store.threads.create("t", config("gpt-4o", keep_tool_results=3)) == created


async def test_an_unset_keep_tool_results_stays_unset(store: Store) -> None:
    created = await store.threads.create("t", config("m"))
    assert not created.config.HasField("keep_tool_results")
    assert not (await store.threads.get("t")).config.HasField("keep_tool_results")


async def test_a_taken_id_with_another_config_names_what_differs(store: Store) -> None:
    await store.threads.create("t", config("m"))
    with pytest.raises(AlreadyExists) as refused:
        await store.threads.create("t", config("other", max_context_tokens=9000))
    assert refused.value.reason == reasons.THREAD_CONFLICT
    assert refused.value.metadata == {"thread_id": "t", "differing_fields": "max_context_tokens,model"}


async def test_an_unknown_thread_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound) as missing:
        await store.threads.get("nope")
    assert missing.value.reason == reasons.THREAD_NOT_FOUND
    with pytest.raises(NotFound):
        await store.threads.update("nope", config("m"), config("m"))


async def test_an_update_applies_only_to_the_config_it_was_made_from(store: Store) -> None:
    before = await store.threads.create("t", config("m"))
    await store.entries.append(batch("t", user("e1", "u1")))
    updated = await store.threads.update("t", config("m2", compaction_strategy=2), before.config)
    assert not isinstance(updated, Conflict)
    assert updated.config.model == "m2" and updated.config.compaction_strategy == 2
    assert updated.entry_count == 1
    assert updated.update_time.ToDatetime() >= before.update_time.ToDatetime()
    stale = await store.threads.update("t", config("m3"), before.config)
    assert isinstance(stale, Conflict)
    assert (await store.threads.get("t")).config.model == "m2"
