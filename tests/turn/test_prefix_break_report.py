"""A round's history report says when its body stopped reusing the previous round's prefix, why, and
how many tokens of history that cost (HistoryDecisionReport.prefix_break)."""

from __future__ import annotations

from pioneer_grpc.v1 import chat_pb2, history_pb2, provider_service_pb2, turn_service_pb2
from tests.history.agent_turns import tool_turn
from tests.history.rpc import config
from tests.turn.test_prepare_turn import Client, compile_input, weather_tool

P = provider_service_pb2
H = history_pb2


class Loop:
    """A thread's turns: the user's message, then the call and its result, then the answer."""

    def __init__(self, client: Client, thread_id: str, lines: int = 4) -> None:
        self.client, self.thread_id, self.lines = client, thread_id, lines
        self.turn = 0

    async def round(self, entries: list[H.ConversationEntry], **fields: object) -> H.HistoryDecisionReport:
        request = turn_service_pb2.PrepareTurnRequest(
            thread_id=self.thread_id,
            turn_id=entries[0].turn_id,
            new_entries=entries,
            compile_input=fields.pop("compile_input", compile_input()),
            tools=fields.pop("tools", [weather_tool()]),
            provider=fields.pop("provider", P.PROVIDER_ANTHROPIC_MESSAGES),
            provider_body_only=True,
            **fields,  # type: ignore[arg-type]
        )
        return (await self.client.prepare_turn(request)).history_report

    async def turn_rounds(self, **fields: object) -> list[H.HistoryDecisionReport]:
        entries = tool_turn(self.turn, lines=self.lines)
        reports = [await self.round(entries[:1], **fields), await self.round(entries[1:3], **fields)]
        await self.client.complete_turn(
            thread_id=self.thread_id, turn_id=entries[0].turn_id, entries=entries[3:]
        )
        self.turn += 1
        return reports


def _causes(reports: list[H.HistoryDecisionReport]) -> list[int]:
    return [r.prefix_break.cause for r in reports if r.HasField("prefix_break")]


async def test_rounds_that_extend_the_previous_body_report_no_break(server):
    client = Client(server)
    await client.thread("steady")
    loop = Loop(client, "steady")
    reports = [report for _ in range(4) for report in await loop.turn_rounds()]
    # The clock in the dynamic half changes nothing: it goes after the conversation.
    assert _causes(reports) == []


async def test_a_section_the_tools_and_the_model_are_named(server):
    client = Client(server)
    await client.thread("changes")
    loop = Loop(client, "changes")
    await loop.turn_rounds()
    changed = compile_input()
    changed.include_tool_recovery_policy = False  # a stable section less
    [first, second] = await loop.turn_rounds(compile_input=changed)
    assert first.prefix_break.cause == H.PREFIX_BREAK_CAUSE_SECTION
    assert first.prefix_break.section_id == "tool_recovery_policy"
    # Everything the provider cached of the history is read again: 4 entries of the first turn.
    assert first.prefix_break.tokens_invalidated > 0 == first.prefix_break.tokens_kept
    assert not second.HasField("prefix_break")
    tools = [weather_tool(), chat_pb2.ToolDefinition(name="list_files", description="Files.")]
    [first, _] = await loop.turn_rounds(compile_input=changed, tools=tools)
    assert first.prefix_break.cause == H.PREFIX_BREAK_CAUSE_TOOLS
    [first, _] = await loop.turn_rounds(compile_input=changed, tools=tools, model="claude-opus-4-1")
    assert first.prefix_break.cause == H.PREFIX_BREAK_CAUSE_MODEL
    # The dynamic half before the conversation: the clock is a section that breaks the prefix.
    before = P.RenderOptions(dynamic_context_placement=chat_pb2.DYNAMIC_CONTEXT_PLACEMENT_BEFORE_CONVERSATION)
    fields = {"compile_input": changed, "tools": tools, "model": "claude-opus-4-1", "render_options": before}
    [first, _] = await loop.turn_rounds(**fields)
    assert first.prefix_break.cause == H.PREFIX_BREAK_CAUSE_RENDERING
    fields["compile_input"] = compile_input("Date: 2026-11-30")
    fields["compile_input"].include_tool_recovery_policy = False
    [first, _] = await loop.turn_rounds(**fields)
    assert (first.prefix_break.cause, first.prefix_break.section_id) == (
        H.PREFIX_BREAK_CAUSE_SECTION,
        "extra_system",
    )


async def test_a_compaction_is_named_with_the_history_it_invalidated(server):
    client = Client(server)
    # Budget 6,000: threshold 4,800; the tool results (40 lines) are cleared in chunks, then summarized.
    settings = config(8_000, 2_000, model="claude-sonnet-4-5")
    settings.clear_at_least_percent = 20
    await client.create_thread(thread_id="compacted", config=settings)
    loop = Loop(client, "compacted", lines=40)
    reports = [report for _ in range(16) for report in await loop.turn_rounds()]
    breaks = [r.prefix_break for r in reports if r.HasField("prefix_break")]
    causes = {b.cause for b in breaks}
    assert causes <= {H.PREFIX_BREAK_CAUSE_CLEARING, H.PREFIX_BREAK_CAUSE_SUMMARY}
    assert H.PREFIX_BREAK_CAUSE_CLEARING in causes
    # Few rounds break (in chunks), each naming the first entry sent otherwise and what it cost.
    assert 1 <= len(breaks) <= 8
    cleared: set[str] = set()
    for found in breaks:
        assert found.tokens_invalidated > 0
        # Which entries the break summarized or cleared: all counted, the first 100 named.
        assert found.entry_count == len(found.entry_ids) > 0
        if found.cause == H.PREFIX_BREAK_CAUSE_CLEARING:
            assert found.entry_id.startswith("r")
            # The tool results cleared this round, each once over the thread, the first one first.
            assert found.entry_ids[0] == found.entry_id
            assert all(e.startswith("r") for e in found.entry_ids) and not cleared & set(found.entry_ids)
            cleared |= set(found.entry_ids)
        else:  # a summary: the entries it covers, from the first one this round no longer sends
            assert found.entry_ids[0] == found.entry_id or found.entry_id == ""


async def test_a_round_sent_again_reports_what_it_reported_the_first_time(server):
    client = Client(server)
    await client.thread("again")
    loop = Loop(client, "again")
    await loop.turn_rounds()
    changed = compile_input()
    changed.include_tool_recovery_policy = False
    entries = tool_turn(loop.turn, lines=loop.lines)
    first = await loop.round(entries[:1], compile_input=changed)
    again = await loop.round(entries[:1], compile_input=changed)  # a retry: the entries are idempotent
    assert first.prefix_break.cause == H.PREFIX_BREAK_CAUSE_SECTION
    assert again.prefix_break == first.prefix_break
