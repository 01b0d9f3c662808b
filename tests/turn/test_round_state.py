"""A PrepareTurn round leaves the store exactly as the separate use cases it replaced did.

The reference is the composition PrepareTurn was before it became one
transaction: append the turn's entries, load the history leaving the turn out,
record the compile's manifest on the turn. Both run on twin threads of one
database (SQLite and PostgreSQL), turn after turn, each turn completed after its
final answer; every row they leave behind is compared, with ids and clocks left
out and the thread id normalised. The reference runs on a second server whose
kept histories are dropped before each load, so the rounds' histories (kept and
brought current by the completed turns) are compared with whole reads.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format, struct_pb2
from sqlalchemy import select

from pioneer_grpc.history.entries import parse_artifact_refs, parse_tool_calls
from pioneer_grpc.history.render import to_chat_message
from pioneer_grpc.service import history as history_ops
from pioneer_grpc.service.observe import record_manifest
from pioneer_grpc.store.entries import RowsRead
from pioneer_grpc.store.models import EntryRow, ManifestEventRow, ThreadRow, TurnRow
from pioneer_grpc.v1 import (
    chat_pb2,
    common_pb2,
    history_pb2,
    history_service_pb2,
    prompt_pb2,
    turn_service_pb2,
)
from tests.turn.test_prepare_turn import Client, compile_input

REFERENCE, ROUND = "thread-reference", "thread-round"
READS = {("t1", 1): 12, ("t1", 2): 0, ("t2", 1): 4, ("t2", 2): 0, ("t3", 1): 4, ("t3", 2): 0}


def entries_of_round(n: int, turn: str = "t1") -> list[history_pb2.ConversationEntry]:
    """Round n of a turn: the user's message, then a tool call and its result (with an artifact in t1)."""
    if n == 1:
        return [history_pb2.ConversationEntry(entry_id=f"{turn}-u", role=1, content=f"What is in {turn}.md?")]
    call = common_pb2.ToolCall(id=f"call-{turn}", name="read_file", arguments=f'{{"path": "{turn}.md"}}')
    result = history_pb2.ConversationEntry(
        entry_id=f"{turn}-result", role=3, tool_call_id=f"call-{turn}", name="read_file", content="buy milk"
    )
    if turn == "t1":
        result.artifact_refs.append(
            common_pb2.ArtifactRef(artifact_id="a1", display_name="notes.md", kind="text")
        )
    return [
        history_pb2.ConversationEntry(
            entry_id=f"{turn}-call", role=2, content="Reading it.", tool_calls=[call]
        ),
        result,
    ]


def answer(turn: str) -> history_pb2.ConversationEntry:
    return history_pb2.ConversationEntry(
        entry_id=f"{turn}-a", turn_id=turn, role=2, content=f"Done with {turn}."
    )


def tool() -> chat_pb2.ToolDefinition:
    params = struct_pb2.Struct()
    params.update({"type": "object", "properties": {"path": {"type": "string"}}})
    return chat_pb2.ToolDefinition(name="read_file", description="Read a file", parameters=params)


async def seed(c: Client, thread_id: str) -> None:
    await c.thread(thread_id, model="m", max_context_tokens=50_000)
    for n in range(3):
        turn = f"seed-{n}"
        call = common_pb2.ToolCall(id=f"c{n}", name="read_file", arguments="{}")
        await c.append_entries(
            history_service_pb2.AppendEntriesRequest(
                thread_id=thread_id,
                entries=[
                    history_pb2.ConversationEntry(
                        entry_id=f"{turn}-u", turn_id=turn, role=1, content=f"q{n}"
                    ),
                    history_pb2.ConversationEntry(
                        entry_id=f"{turn}-c", turn_id=turn, role=2, tool_calls=[call], content=""
                    ),
                    history_pb2.ConversationEntry(
                        entry_id=f"{turn}-r", turn_id=turn, role=3, tool_call_id=f"c{n}", content=f"r{n}"
                    ),
                    history_pb2.ConversationEntry(
                        entry_id=f"{turn}-a", turn_id=turn, role=2, content=f"a{n}"
                    ),
                ],
            )
        )
        await c.complete_turn(history_service_pb2.CompleteTurnRequest(thread_id=thread_id, turn_id=turn))


async def reference_round(
    server, turn: str, n: int, compiled: prompt_pb2.CompiledPromptPayload
) -> tuple[list[Any], history_pb2.HistoryDecisionReport]:
    """The round as separate use cases, the history read whole; returns the ChatRequest messages
    it would send and the history's report."""
    ctx = server.ctx
    entries = []
    for entry in entries_of_round(n, turn):
        stored = history_pb2.ConversationEntry()
        stored.CopyFrom(entry)
        stored.turn_id = turn
        entries.append(stored)
    await history_ops.append_entries(ctx, REFERENCE, entries)
    ctx.load_cache.clear()
    history, report = await history_ops.load_history(ctx, REFERENCE, exclude_turn_id=turn)
    await record_manifest(ctx, REFERENCE, turn, compiled.manifest)
    async with ctx.store.sessions() as session:
        query = select(EntryRow).where(EntryRow.thread_id == REFERENCE, EntryRow.turn_id == turn)
        current = [
            history_pb2.ConversationEntry(
                entry_id=row.entry_id,
                turn_id=row.turn_id,
                role=row.role,  # type: ignore[arg-type]
                content=row.content,
                tool_calls=parse_tool_calls(row.tool_calls_json),
                tool_call_id=row.tool_call_id,
                name=row.name,
                artifact_refs=parse_artifact_refs(row.artifact_refs_json),
            )
            for row in await session.scalars(query.order_by(EntryRow.id))
        ]
    return [*history, *(to_chat_message(e) for e in current)], report


def normalised(value: Any, thread_id: str) -> Any:
    return json.loads(json.dumps(value, default=str).replace(thread_id, "THREAD"))


async def rows(server, thread_id: str) -> dict[str, Any]:
    async with server.ctx.store.sessions() as session:
        thread = (
            await session.execute(select(ThreadRow).where(ThreadRow.thread_id == thread_id))
        ).scalar_one()
        turns = (
            await session.scalars(
                select(TurnRow).where(TurnRow.thread_id == thread_id).order_by(TurnRow.turn_id)
            )
        ).all()
        entries = (
            await session.scalars(
                select(EntryRow).where(EntryRow.thread_id == thread_id).order_by(EntryRow.id)
            )
        ).all()
        events = (
            await session.scalars(
                select(ManifestEventRow)
                .where(ManifestEventRow.thread_id == thread_id)
                .order_by(ManifestEventRow.id)
            )
        ).all()
    event_ids = {event.id: i for i, event in enumerate(events)}
    skip = {"id", "thread_id", "created_at", "updated_at", "manifest_event_id", "manifest_pb"}

    def plain(row: Any) -> dict[str, Any]:
        return {k: v for k, v in vars(row).items() if not k.startswith("_") and k not in skip}

    return normalised(
        {
            "thread": plain(thread),
            "turns": [
                {**plain(t), "event": None if t.manifest_event_id is None else event_ids[t.manifest_event_id]}
                for t in turns
            ],
            "entries": [plain(e) for e in entries],
            "events": [
                {
                    "turn_id": e.turn_id,
                    "manifest": json_format.MessageToDict(
                        prompt_pb2.PromptManifest.FromString(e.manifest_pb)
                    ),
                }
                for e in events
            ],
        },
        thread_id,
    )


async def test_a_round_leaves_the_rows_the_separate_use_cases_left(database_url, server_factory):
    server = await server_factory(database_url=database_url)
    reference = await server_factory(database_url=database_url)
    c = Client(server)
    for thread_id in (REFERENCE, ROUND):
        await seed(c, thread_id)
    kept = 12
    for turn in ("t1", "t2", "t3"):
        for n, extra in ((1, f"Date: 2026-11-29 {turn}"), (2, f"Date: 2026-11-30 {turn}")):
            request = turn_service_pb2.PrepareTurnRequest(
                thread_id=ROUND,
                turn_id=turn,
                new_entries=entries_of_round(n, turn),
                compile_input=compile_input(extra),
                tools=[tool()],
            )
            before = RowsRead.entries
            response = await c.prepare_turn(request)
            # Completed entries the round read: the seed whole at first, nothing more within a
            # turn; then the entries of the turn completed since only (t1's artifact counted with
            # them, as the whole read counts it).
            assert RowsRead.entries - before == READS[turn, n]
            compiled = server.ctx.compile_cache.compile(compile_input(extra), server.ctx.config.homes)
            messages, report = await reference_round(reference, turn, n, compiled)
            assert list(response.chat_request.messages) == messages
            assert response.history_report == report
            assert response.history_report.entries_kept == kept
            assert await rows(server, ROUND) == await rows(server, REFERENCE)
        for thread_id in (REFERENCE, ROUND):
            await c.append_entries(
                history_service_pb2.AppendEntriesRequest(thread_id=thread_id, entries=[answer(turn)])
            )
            await c.complete_turn(history_service_pb2.CompleteTurnRequest(thread_id=thread_id, turn_id=turn))
        kept += 4
    assert await rows(server, ROUND) == await rows(server, REFERENCE)


async def test_a_retried_round_returns_the_same_event_and_publishes_no_other(pg_server):
    c = Client(pg_server)
    await seed(c, ROUND)

    def request(extra: str) -> turn_service_pb2.PrepareTurnRequest:
        return turn_service_pb2.PrepareTurnRequest(
            thread_id=ROUND, turn_id="t1", new_entries=entries_of_round(1), compile_input=compile_input(extra)
        )

    first = await c.prepare_turn(request("a"))
    again = await c.prepare_turn(request("a"))
    assert again.manifest_event_id == first.manifest_event_id
    assert again.chat_request == first.chat_request
    other = await c.prepare_turn(request("b"))
    back = await c.prepare_turn(request("a"))
    # The turn keeps the latest compile: going back to the first is a new event.
    assert len({first.manifest_event_id, other.manifest_event_id, back.manifest_event_id}) == 3
    state = await rows(pg_server, ROUND)
    assert [e["turn_id"] for e in state["events"]] == ["t1", "t1", "t1"]
    assert [t["event"] for t in state["turns"] if t["turn_id"] == "t1"] == [2]


async def test_a_repeated_compile_on_a_turn_is_one_event(pg_server):
    compiled = pg_server.ctx.compile_cache.compile(compile_input(), pg_server.ctx.config.homes)
    first = await record_manifest(pg_server.ctx, "t", "turn-1", compiled.manifest)
    assert await record_manifest(pg_server.ctx, "t", "turn-1", compiled.manifest) == first
    async with pg_server.ctx.store.sessions() as session:
        assert len((await session.scalars(select(ManifestEventRow.id))).all()) == 1
