"""A turn in three calls, and errors without side effects.

PrepareTurn with the user's message, PrepareTurn with the call and its result,
CompleteTurn with the final answer (appended and completed in one transaction,
a no-op when retried). Every failing PrepareTurn, AppendEntries and CompleteTurn
leaves the store as it was: every row of the thread, compared before and after.
"""

from __future__ import annotations

import grpc
from sqlalchemy import select

from pioneer_grpc.caps.history import MAX_ENTRIES_PER_APPEND
from pioneer_grpc.store.models import EntryRow, ManifestEventRow, ThreadRow, ToolCallRow, TurnRow
from pioneer_grpc.v1 import chat_pb2, history_pb2, provider_service_pb2, turn_service_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from tests.history.rpc import ASSISTANT, TOOL, USER, entry, failure, load, tool_call
from tests.turn.test_prepare_turn import Client, compile_input, weather_tool


async def stored_rows(server, thread_id: str, updated: bool) -> list[tuple]:
    """Every row of the thread in every table an append, round or completion writes
    (without the update times unless `updated`)."""
    rows: list[tuple] = []
    async with server.ctx.store.sessions() as session:
        for table in (ThreadRow, TurnRow, EntryRow, ToolCallRow, ManifestEventRow):
            columns = [c.key for c in table.__table__.columns if updated or c.key != "updated_at"]
            found = await session.execute(select(table).where(table.thread_id == thread_id))
            rows += [(table.__tablename__, *(getattr(row, c) for c in columns)) for row in found.scalars()]
    return sorted(rows, key=repr)


async def everything(c: Client, server, thread_id: str, updated: bool = True) -> tuple:
    """What the RPCs show of the thread's entries and counts, and every row the store holds of it."""
    listed = await c.list_entries(pb.ListEntriesRequest(thread_id=thread_id, page_size=500))
    thread = (await c.get_thread(pb.GetThreadRequest(thread_id=thread_id))).thread
    if not updated:
        thread.ClearField("update_time")
    return (
        listed.SerializeToString(),
        thread.SerializeToString(),
        await stored_rows(server, thread_id, updated),
    )


def bare(entry_id: str, role: int, content: str = "", **fields) -> history_pb2.ConversationEntry:
    """An entry without a turn_id: the request's turn names it."""
    return history_pb2.ConversationEntry(entry_id=entry_id, role=role, content=content, **fields)


CALL = bare("a1", ASSISTANT, tool_calls=[tool_call("call_0", "get_weather", '{"city":"Oslo"}')])
RESULT = bare("r1", TOOL, "4 C, rain", tool_call_id="call_0", name="get_weather")
ANSWER = bare("f1", ASSISTANT, "It is 4 C and raining in Oslo.")


async def prepare(c: Client, turn_id: str, *entries, **fields) -> turn_service_pb2.PrepareTurnResponse:
    return await c.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id="t",
            turn_id=turn_id,
            new_entries=entries,
            compile_input=compile_input(),
            tools=[weather_tool()],  # resent every round: a round knows only the tools it is sent
            provider=provider_service_pb2.PROVIDER_OPENAI_CHAT_COMPLETIONS,
            **fields,
        )
    )


def complete(c: Client, turn_id: str, *entries):
    return c.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id=turn_id, entries=entries))


async def test_a_turn_in_three_calls_and_its_retry(pg_server):
    c = Client(pg_server)
    await c.thread("t")
    await prepare(c, "turn-1", bare("u1", USER, "Weather in Oslo?"))
    reply = await prepare(c, "turn-1", CALL, RESULT)
    assert [m.role for m in reply.chat_request.messages] == [
        chat_pb2.CHAT_ROLE_USER,
        chat_pb2.CHAT_ROLE_ASSISTANT,
        chat_pb2.CHAT_ROLE_TOOL,
    ]
    done = await complete(c, "turn-1", ANSWER)
    assert (done.completed_entry_count, done.created_count, done.existing_count) == (4, 1, 0)
    history = await load(c, "t")
    assert [m.content for m in history.messages][-1] == "It is 4 C and raining in Oslo."
    assert len(history.messages) == 4
    before = await everything(c, pg_server, "t", updated=False)
    # The answer was lost on the way back: the same call again changes nothing but update times.
    again = await complete(c, "turn-1", ANSWER)
    assert (again.completed_entry_count, again.created_count, again.existing_count) == (4, 0, 1)
    assert await everything(c, pg_server, "t", updated=False) == before
    # The next turn sees the whole of this one.
    reply = await prepare(c, "turn-2", bare("u2", USER, "And tomorrow?"))
    assert len(reply.chat_request.messages) == 5


async def test_complete_turn_with_entries_starts_and_ends_a_turn(pg_server):
    c = Client(pg_server)
    await c.thread("t")
    done = await complete(c, "turn-1", bare("u1", USER, "Hi"), entry("f1", "turn-1", ASSISTANT, "Hello"))
    assert (done.completed_entry_count, done.created_count) == (2, 2)
    assert [m.content for m in (await load(c, "t")).messages] == ["Hi", "Hello"]
    # Without entries an unknown turn is still NOT_FOUND.
    error = await failure(complete(c, "turn-9"))
    assert error.code == grpc.StatusCode.NOT_FOUND


async def test_complete_turn_with_entries_completes_under_the_appends_lock(pg_server, monkeypatch):
    """The append locked the thread: the completion in its transaction neither locks it again nor
    takes CompleteTurn's own path (a statement alone on PostgreSQL, the lock then the completion
    on SQLite)."""
    relocks: list[str] = []
    store = pg_server.ctx.store
    complete_in, completed_alone = store.complete_in, store.completed_alone
    monkeypatch.setattr(store, "complete_in", lambda *a, **k: relocks.append("lock") or complete_in(*a, **k))
    monkeypatch.setattr(
        store, "completed_alone", lambda *a, **k: relocks.append("alone") or completed_alone(*a, **k)
    )
    c = Client(pg_server)
    await c.thread("t")
    await prepare(c, "turn-1", bare("u1", USER, "Weather in Oslo?"))
    await prepare(c, "turn-1", CALL, RESULT)
    done = await complete(c, "turn-1", ANSWER)
    assert (done.completed_entry_count, done.created_count, relocks) == (4, 1, [])
    await prepare(c, "turn-2", bare("u2", USER, "And Bergen?"))
    done = await complete(c, "turn-2")  # without entries: CompleteTurn's own path
    own_path = ["alone"] if pg_server.ctx.store.postgres else ["alone", "lock"]
    assert (done.completed_entry_count, relocks) == (1, own_path)


async def test_failing_calls_leave_the_store_as_it_was(pg_server):
    c = Client(pg_server)
    await c.thread("t")
    await prepare(c, "turn-1", bare("u1", USER, "Weather in Oslo?"))
    await complete(c, "turn-1", CALL, RESULT, ANSWER)
    await prepare(c, "turn-2", bare("u2", USER, "And Bergen?"))
    before = await everything(c, pg_server, "t")

    call_2 = bare("a2", ASSISTANT, tool_calls=[tool_call("call_1", "get_weather", '{"city":"Bergen"}')])
    changed = bare("u2", USER, "And Trondheim?")
    orphan = bare("r9", TOOL, "?", tool_call_id="nobody")
    answered_twice = [
        entry("a13", "turn-2", ASSISTANT, tool_calls=[tool_call("call_5", "get_weather")]),
        entry("r13", "turn-2", TOOL, "1", tool_call_id="call_5", name="get_weather"),
        entry("r14", "turn-2", TOOL, "2", tool_call_id="call_5", name="get_weather"),
    ]
    failing = {
        # The call without its result: TOOL_RESULTS_PENDING, the call not kept.
        "prepare, results pending": lambda: prepare(c, "turn-2", bare("x1", USER, "more"), call_2),
        "prepare, pending alone": lambda: prepare(c, "turn-2", call_2),
        "prepare, an entry conflict": lambda: prepare(c, "turn-2", bare("x2", USER, "new"), changed),
        "prepare, a completed turn": lambda: prepare(c, "turn-1", bare("x3", USER, "late")),
        "prepare, an orphan result": lambda: prepare(c, "turn-2", bare("x4", USER, "new"), orphan),
        "prepare, no such thread model": lambda: prepare(c, "turn-2", bare("x5", USER, "n"), model="x" * 201),
        "append, an orphan result": lambda: c.append_entries(
            pb.AppendEntriesRequest(
                thread_id="t",
                entries=[
                    entry("x6", "turn-2", USER, "new"),
                    entry("r9", "turn-2", TOOL, "?", tool_call_id="nobody"),
                ],
            )
        ),
        "append, an entry conflict": lambda: c.append_entries(
            pb.AppendEntriesRequest(
                thread_id="t",
                entries=[entry("x7", "turn-2", USER, "new"), entry("u2", "turn-2", USER, "changed")],
            )
        ),
        "append, a completed turn": lambda: c.append_entries(
            pb.AppendEntriesRequest(
                thread_id="t",
                entries=[entry("x8", "turn-3", USER, "new"), entry("x9", "turn-1", USER, "late")],
            )
        ),
        "complete, an orphan result": lambda: complete(c, "turn-2", bare("x10", ASSISTANT, "a"), orphan),
        "complete, another turn's entry": lambda: complete(
            c, "turn-2", entry("x11", "turn-3", ASSISTANT, "a")
        ),
        "complete, an entry conflict": lambda: complete(c, "turn-2", bare("x12", ASSISTANT, "a"), changed),
        # Checked against what the store holds, inside the transaction: the batch's earlier rows roll back.
        "append, a second result for an answered call": lambda: c.append_entries(
            pb.AppendEntriesRequest(
                thread_id="t", entries=[entry("x13", "turn-2", USER, "new"), *answered_twice]
            )
        ),
        "append, a result naming another tool": lambda: c.append_entries(
            pb.AppendEntriesRequest(
                thread_id="t",
                entries=[
                    entry("x14", "turn-2", USER, "new"),
                    entry("a14", "turn-2", ASSISTANT, tool_calls=[tool_call("call_6", "get_weather")]),
                    entry("r15", "turn-2", TOOL, "?", tool_call_id="call_6", name="read_file"),
                ],
            )
        ),
        "append, a call id twice in one entry": lambda: c.append_entries(
            pb.AppendEntriesRequest(
                thread_id="t",
                entries=[
                    entry("x15", "turn-2", USER, "new"),
                    entry(
                        "a15",
                        "turn-2",
                        ASSISTANT,
                        tool_calls=[tool_call("call_7", "get_weather"), tool_call("call_7", "get_weather")],
                    ),
                ],
            )
        ),
        "append, an empty media part": lambda: c.append_entries(
            pb.AppendEntriesRequest(
                thread_id="t",
                entries=[
                    entry("x16", "turn-2", USER, "new"),
                    entry(
                        "x17",
                        "turn-2",
                        USER,
                        "look",
                        content_parts=[chat_pb2.ContentPart(image=chat_pb2.MediaPart())],
                    ),
                ],
            )
        ),
        "complete, a second result for an answered call": lambda: complete(c, "turn-2", *answered_twice),
        "complete, over the cap": lambda: complete(
            c, "turn-2", *[bare(f"y{i}", ASSISTANT, "a") for i in range(MAX_ENTRIES_PER_APPEND + 1)]
        ),
    }
    codes = {}
    for name, call in failing.items():  # one at a time: a gRPC call starts when it is made
        codes[name] = (await failure(call())).code
        assert await everything(c, pg_server, "t") == before, name
    assert codes == {
        "prepare, results pending": grpc.StatusCode.FAILED_PRECONDITION,
        "prepare, pending alone": grpc.StatusCode.FAILED_PRECONDITION,
        "prepare, an entry conflict": grpc.StatusCode.ALREADY_EXISTS,
        "prepare, a completed turn": grpc.StatusCode.FAILED_PRECONDITION,
        "prepare, an orphan result": grpc.StatusCode.INVALID_ARGUMENT,
        "prepare, no such thread model": grpc.StatusCode.INVALID_ARGUMENT,
        "append, an orphan result": grpc.StatusCode.INVALID_ARGUMENT,
        "append, an entry conflict": grpc.StatusCode.ALREADY_EXISTS,
        "append, a completed turn": grpc.StatusCode.FAILED_PRECONDITION,
        "complete, an orphan result": grpc.StatusCode.INVALID_ARGUMENT,
        "complete, another turn's entry": grpc.StatusCode.INVALID_ARGUMENT,
        "complete, an entry conflict": grpc.StatusCode.ALREADY_EXISTS,
        "append, a second result for an answered call": grpc.StatusCode.INVALID_ARGUMENT,
        "append, a result naming another tool": grpc.StatusCode.INVALID_ARGUMENT,
        "append, a call id twice in one entry": grpc.StatusCode.INVALID_ARGUMENT,
        "append, an empty media part": grpc.StatusCode.INVALID_ARGUMENT,
        "complete, a second result for an answered call": grpc.StatusCode.INVALID_ARGUMENT,
        "complete, over the cap": grpc.StatusCode.INVALID_ARGUMENT,
    }
    # The turn goes on: the call with its result, then the answer.
    await prepare(c, "turn-2", call_2, bare("r2", TOOL, "9 C", tool_call_id="call_1", name="get_weather"))
    done = await complete(c, "turn-2", bare("f2", ASSISTANT, "9 C in Bergen."))
    assert done.completed_entry_count == 4
