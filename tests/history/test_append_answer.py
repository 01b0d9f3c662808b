"""AppendEntries answers its entries as a read of them gives them (SQLite and PostgreSQL).

The entries an append creates are answered from the rows it wrote; those stored
before are read back. Either way each must equal, field for field (sequence,
create_time to the microsecond, completed, tokens), what ListEntries reads.
"""

from __future__ import annotations

from pioneer_grpc.v1 import common_pb2, history_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import ASSISTANT, TOOL, USER, create, entry, tool_call
from tests.history.test_entry_media import image, png


async def _append(history, *entries: history_pb2.ConversationEntry) -> pb.AppendEntriesResponse:
    return await history.append_entries(pb.AppendEntriesRequest(thread_id="t", entries=entries))


async def _listed(history) -> dict[str, history_pb2.ConversationEntry]:
    found = await history.list_entries(pb.ListEntriesRequest(thread_id="t", page_size=500))
    return {e.entry_id: e for e in found.entries}


async def test_the_answered_entries_are_the_stored_entries(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    ref = common_pb2.ArtifactRef(artifact_id="a1", display_name="car.jpg", kind="image", size_bytes=2048)
    first = await _append(history, entry("u1", "turn-1", USER, "hi", artifact_refs=[ref]))
    asked = entry("u2", "turn-1", USER, "which is larger? é ✓", content_parts=[image(png(8, 8))])
    thinking = entry("a1", "turn-1", ASSISTANT, "", tool_calls=[tool_call("c1", "read", '{"p": "ü"}')])
    thinking.reasoning_content = "first read it"
    empty_reasoning = entry("a2", "turn-1", ASSISTANT, "done")
    empty_reasoning.reasoning_content = ""
    batch = [
        asked,
        entry("u1", "turn-1", USER, "hi", artifact_refs=[ref]),  # stored before: read back
        thinking,
        entry("r1", "turn-1", TOOL, "result", tool_call_id="c1", name="read"),
        empty_reasoning,
    ]
    response = await _append(history, *batch)
    assert (response.created_count, response.existing_count) == (4, 1)
    listed = await _listed(history)
    assert [e.entry_id for e in response.entries] == [e.entry_id for e in batch]
    for answered in response.entries:
        assert answered == listed[answered.entry_id]
    assert response.entries[1] == first.entries[0]
    assert response.entries[2].HasField("reasoning_content")
    assert response.entries[4].HasField("reasoning_content")
    assert not response.entries[0].HasField("reasoning_content")
    assert response.entries[0].create_time.nanos % 1000 == 0
    assert not any(e.completed for e in response.entries)

    # After the turn completes, a repeat answers its entries completed, as stored.
    await history.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="turn-1"))
    again = await _append(history, asked, thinking)
    assert (again.created_count, again.existing_count) == (0, 2)
    listed = await _listed(history)
    assert list(again.entries) == [listed["u2"], listed["a1"]]
    assert all(e.completed for e in again.entries)


async def test_complete_turn_with_entries_stores_them_completed(pg_server):
    history = await pg_server.client()
    await create(history, "t")
    done = await history.complete_turn(
        pb.CompleteTurnRequest(
            thread_id="t",
            turn_id="turn-1",
            entries=[entry("u1", "", USER, "q"), entry("a1", "", ASSISTANT, "a")],
        )
    )
    assert (done.completed_entry_count, done.created_count, done.existing_count) == (2, 2, 0)
    listed = await _listed(history)
    assert [e.completed for e in listed.values()] == [True, True]
