"""Appends: idempotent by entry id, refused whole when a rule, a repeat or a completed turn says so."""

from __future__ import annotations

import pytest

from pioneer_grpc import reasons
from pioneer_grpc.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from pioneer_grpc.store.port import AppendOutcome, Recount, Store
from tests.store.contract.rows import CL100K, O200K, answer, batch, call, config, result, turn, user


async def _appended(store: Store, *args: object, **options: object) -> AppendOutcome:
    outcome = await store.entries.append(batch(*args, **options))  # type: ignore[arg-type]
    assert isinstance(outcome, AppendOutcome)
    return outcome


async def test_an_append_answers_the_entries_as_stored_and_a_repeat_stores_nothing(store: Store) -> None:
    await store.threads.create("t", config())
    entries = (user("e1", "u1"), call("e2", "u1", "c1"), result("e3", "u1", "c1"))
    first = await _appended(store, "t", *entries)
    assert (first.created_count, first.existing_count) == (3, 0)
    assert [e.entry_id for e in first.entries] == ["e1", "e2", "e3"]
    sequences = [e.sequence for e in first.entries]
    assert sequences == sorted(sequences) and len(set(sequences)) == 3
    assert [e.token_count for e in first.entries] == [7, 8, 9]
    assert {e.tokenizer for e in first.entries} == {CL100K}
    assert not any(e.completed for e in first.entries)
    assert first.entries[1].tool_calls[0].id == "c1"
    again = await _appended(store, "t", *entries)
    assert (again.created_count, again.existing_count) == (0, 3)
    assert list(again.entries) == list(first.entries)
    assert (await store.threads.get("t")).entry_count == 3


async def test_counts_only_answers_no_entries(store: Store) -> None:
    await store.threads.create("t", config())
    outcome = await _appended(store, "t", user("e1", "u1"), with_entries=False)
    assert (outcome.entries, outcome.created_count) == ([], 1)


async def test_a_repeat_with_other_content_is_refused_naming_the_fields(store: Store) -> None:
    await store.threads.create("t", config())
    await _appended(store, "t", user("e1", "u1", "hello"))
    with pytest.raises(AlreadyExists) as refused:
        await store.entries.append(batch("t", user("e1", "u2", "hello"), user("e9", "u2")))
    assert refused.value.reason == reasons.ENTRY_CONFLICT
    assert refused.value.metadata["differing_fields"] == "turn_id"
    assert refused.value.metadata["stored_turn_id"] == "u1"
    assert (await store.threads.get("t")).entry_count == 1  # e9 is not stored either


async def test_a_result_without_its_call_is_refused_by_the_history_rules(store: Store) -> None:
    await store.threads.create("t", config())
    with pytest.raises(InvalidArgument) as refused:
        await store.entries.append(
            batch("t", user("e1", "u1"), result("e2", "u1", "c404"), prefix="new_entries")
        )
    assert [v.field for v in refused.value.violations] == ["new_entries[1].tool_call_id"]
    assert (await store.threads.get("t")).entry_count == 0


async def test_a_call_is_answered_against_what_the_thread_holds(store: Store) -> None:
    await store.threads.create("t", config())
    await _appended(store, "t", user("e1", "u1"), call("e2", "u1", "c1"))
    outcome = await _appended(store, "t", result("e3", "u1", "c1"))
    assert outcome.created_count == 1
    stored = await store.entries.stored_calls("t", [result("e4", "u1", "c1")])
    assert stored.thread_calls == {"c1": "e2"}
    assert [e.entry_id for e in stored.turns["u1"]] == ["e1", "e2", "e3"]


async def test_a_batch_counted_in_another_tokenizer_is_sent_back_to_count(store: Store) -> None:
    await store.threads.create("t", config("gpt-4o"))
    found = await store.entries.append(batch("t", user("e1", "u1"), tokenizer=CL100K, model=""))
    assert found == Recount("gpt-4o")
    assert (await store.threads.get("t")).entry_count == 0
    outcome = await _appended(store, "t", user("e1", "u1"), tokenizer=O200K, model="gpt-4o")
    assert outcome.created_count == 1 and outcome.entries[0].tokenizer == O200K


async def test_the_same_tokenizer_under_another_model_is_taken_as_counted(store: Store) -> None:
    await store.threads.create("t", config("gpt-4o"))
    outcome = await _appended(store, "t", user("e1", "u1"), tokenizer=O200K, model="gpt-4.1")
    assert outcome.created_count == 1


async def test_an_append_may_complete_its_turn(store: Store) -> None:
    await store.threads.create("t", config())
    await _appended(store, "t", user("e1", "u1"))
    outcome = await _appended(store, "t", answer("e2", "u1"), complete_turn_id="u1")
    assert (outcome.created_count, outcome.completed_entry_count) == (1, 2)
    assert outcome.entries[0].completed
    read = await store.history.read(_ask("t"))
    assert read.state.completed_count == 2 and read.left_out == (0, 0)


async def test_a_new_entry_of_a_completed_turn_is_refused(store: Store) -> None:
    await store.threads.create("t", config())
    await turn(store, "t", "u1", user("e1", "u1"), answer("e2", "u1"))
    with pytest.raises(FailedPrecondition) as refused:
        await store.entries.append(batch("t", user("e3", "u1")))
    assert refused.value.reason == reasons.TURN_COMPLETED
    again = await _appended(store, "t", user("e1", "u1"))  # a repeat is no new entry
    assert again.existing_count == 1


async def test_an_append_to_an_unknown_thread_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        await store.entries.append(batch("nope", user("e1", "u1")))


async def test_a_turn_completes_once_and_says_how_many_entries_it_has(store: Store) -> None:
    await store.threads.create("t", config())
    await _appended(store, "t", user("e1", "u1"), answer("e2", "u1"))
    await _appended(store, "t", user("e3", "u2"))
    assert (await store.history.read(_ask("t"))).left_out == (3, 2)
    assert await store.turns.complete("t", "u1") == 2
    assert await store.turns.complete("t", "u1") == 2
    read = await store.history.read(_ask("t"))
    assert read.left_out == (1, 1) and read.state.completed_count == 2
    with pytest.raises(NotFound) as missing:
        await store.turns.complete("t", "u9")
    assert missing.value.reason == reasons.TURN_NOT_FOUND
    with pytest.raises(NotFound) as unknown:
        await store.turns.complete("nope", "u1")
    assert unknown.value.reason == reasons.THREAD_NOT_FOUND


def _ask(thread_id: str):  # type: ignore[no-untyped-def]
    from pioneer_grpc.store.port import HistoryAsk

    return HistoryAsk(thread_id, whole=False)
