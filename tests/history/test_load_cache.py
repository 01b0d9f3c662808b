"""Repeated loads of an unchanged thread reuse the answer; any change in the history is seen."""

from __future__ import annotations

import pytest

from pioneer_grpc.history.budget import Budget
from pioneer_grpc.history.decide import LoadResult, Snapshot
from pioneer_grpc.providers.prefix import cut_prefix, extend_prefix, render_prefix, slide_prefix
from pioneer_grpc.providers.specs import SPECS
from pioneer_grpc.service.load_cache import FRAMED_PARTS, LoadCache
from pioneer_grpc.store import entries as entry_store
from pioneer_grpc.store.port import HistoryState
from pioneer_grpc.v1 import chat_pb2, common_pb2, history_pb2, provider_service_pb2
from pioneer_grpc.v1 import history_service_pb2 as pb
from pioneer_grpc.wire import repeated_records
from tests.history.rpc import config, create, load
from tests.history.test_load_rpc import fill


@pytest.fixture
def reads(monkeypatch):
    """The threads of every whole read of a history: a load's, and a compression's under its lock."""
    calls: list[str] = []
    real = entry_store.completed_entries_in

    def counting(conn, tenant, thread_id, *args):
        calls.append(thread_id)
        return real(conn, tenant, thread_id, *args)

    monkeypatch.setattr(entry_store, "completed_entries_in", counting)
    return calls


async def test_unchanged_thread_is_read_once(pg_server, reads):
    history = await pg_server.client()
    await create(history, "t", config(2_000, 1_000))
    await fill(history, "t", 2)
    first, second = await load(history, "t"), await load(history, "t")
    assert first == second
    assert reads == ["t"]
    await load(history, "t", exclude="turn-0")  # another question, another read
    assert reads == ["t", "t"]


async def test_appends_completions_settings_and_summaries_are_seen(pg_server, reads):
    history = await pg_server.client()
    await create(history, "t", config(2_000, 1_000))
    await fill(history, "t", 1)
    assert (await load(history, "t")).report.entries_kept == 2
    await history.append_entries(
        pb.AppendEntriesRequest(
            thread_id="t",
            entries=[history_pb2.ConversationEntry(entry_id="x", turn_id="turn-x", role=1, content="new")],
        )
    )
    assert (await load(history, "t")).report.entries_kept == 2  # not completed yet
    await history.complete_turn(pb.CompleteTurnRequest(thread_id="t", turn_id="turn-x"))
    assert (await load(history, "t")).report.entries_kept == 3
    assert len(reads) == 1  # the completed turn extended the kept history
    await history.update_thread(pb.UpdateThreadRequest(thread_id="t", config=config(1_500)))
    assert (await load(history, "t")).report.budget_tokens == 500
    await fill(history, "t", 1, start=1)  # 505 tokens, threshold 400: summarized, not cached
    assert (await load(history, "t")).report.decision == history_pb2.HISTORY_DECISION_SUMMARIZED
    after = await load(history, "t")
    assert after.report.summary_use == history_pb2.SUMMARY_USE_REUSED
    # Reads: first load, after the update, the summarizing load (once, then again under
    # the lock); the compaction kept the history it leaves, so the load after reads nothing.
    assert len(reads) == 4
    await load(history, "t")
    assert len(reads) == 4


def test_an_extension_keeps_the_encoding_and_framing_of_what_it_keeps_only():
    cache = LoadCache()
    state = HistoryState(1_000, 100, "m", "", 0, None, None, None, None, None, 0, None, 6, 6)
    snapshot = Snapshot(budget=Budget(900), summary=None, entries=())
    messages = [chat_pb2.ChatMessage(content=f"message {i}" * (i + 1)) for i in range(6)]
    first = _stored(cache, messages)
    number = 7
    first.framed(number)  # framed once, kept with the answer
    # The first message stays; two after it go (turns past the limit); the last is replaced
    # (a result cleared since); two are new.
    anew = chat_pb2.ChatMessage(content="message 5, cleared")
    added = [chat_pb2.ChatMessage(content="new a"), chat_pb2.ChatMessage(content="new b")]
    grown = [*messages[:1], *messages[3:5], anew, *added]
    report = history_pb2.HistoryDecisionReport()
    second = cache.store(
        "t", "", state, snapshot, LoadResult(grown, report), extends=first, dropped=(1, 2), replaced=1
    )
    encoded = tuple(m.SerializeToString() for m in grown)
    assert second.encoded_messages == encoded
    assert second.encoded_size == sum(map(len, encoded))
    assert second.framed(number) == repeated_records(number, encoded)
    assert [chat_pb2.ChatMessage.FromString(e) for e in second.encoded_messages] == grown


def _turn_messages(i: int) -> list[chat_pb2.ChatMessage]:
    call = common_pb2.ToolCall(id="call_0", name="read_file", arguments="{}")  # the same id every turn
    return [
        chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_USER, content=f"question {i}"),
        chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_ASSISTANT, tool_calls=[call]),
        chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_TOOL, tool_call_id="call_0", content=f"output {i}"),
        chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_ASSISTANT, content=f"answer {i}"),
    ]


def test_an_extended_answer_extends_the_rendered_prefix_of_the_answer_it_extends():
    cache = LoadCache()
    state = HistoryState(1_000, 100, "m", "", 0, None, None, None, None, None, 0, None, 6, 6)
    snapshot = Snapshot(budget=Budget(900), summary=None, entries=())
    anthropic = provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES
    calls: list[tuple[str, int]] = []

    def build(provider, messages, path):
        calls.append(("whole", len(messages)))
        return render_prefix(provider, messages, path)

    def extend(provider, prefix, messages, path):
        calls.append(("extended", len(messages)))
        return extend_prefix(provider, prefix, messages, path)

    def stored(messages, extends=None, dropped=(0, 0)):
        report = history_pb2.HistoryDecisionReport()
        return cache.store(
            "t", "", state, snapshot, LoadResult(messages, report), extends=extends, dropped=dropped
        )

    messages = _turn_messages(0)
    answer = stored(messages)
    assert answer.rendered_prefix(anthropic, "chat_request", build, extend) is not None
    assert calls == [("whole", 4)]
    # Two turns completed with no round between: the prefix is extended by both, once.
    for i in (1, 2):
        messages = [*messages, *_turn_messages(i)]
        answer = stored(messages, extends=answer)
    # The earlier prefix it keeps counts as a prefix of its own does; built, that takes its place.
    fresh = LoadCache()
    fresh.store("t", "", state, snapshot, LoadResult(messages, history_pb2.HistoryDecisionReport()))
    assert cache.size_bytes == fresh.size_bytes + answer.encoded_size
    calls.clear()
    extended = answer.rendered_prefix(anthropic, "chat_request", build, extend)
    assert calls == [("extended", 8)]
    assert cache.size_bytes == fresh.size_bytes + answer.encoded_size
    assert extended == render_prefix(anthropic, messages)
    assert answer.rendered_prefix(anthropic, "chat_request", build, extend) is extended  # kept
    assert calls == [("extended", 8)]
    # A turn that starts with the assistant: rendered whole.
    messages = [*messages, chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_ASSISTANT, content="more")]
    answer = stored(messages, extends=answer)
    calls.clear()
    assert answer.rendered_prefix(anthropic, "chat_request", build, extend) == render_prefix(
        anthropic, messages
    )
    assert calls == [("extended", 1), ("whole", 13)]
    # The oldest turn left out (past the turn limit) without a slide to take it off: rendered whole.
    messages = [*messages[4:], *_turn_messages(3)]
    answer = stored(messages, extends=answer, dropped=(0, 4))
    calls.clear()
    assert answer.rendered_prefix(anthropic, "chat_request", build, extend) == render_prefix(
        anthropic, messages
    )
    assert calls == [("whole", 13)]


def _own_turn(i: int) -> list[chat_pb2.ChatMessage]:
    """A turn whose call has an id of its own."""
    messages = _turn_messages(i)
    messages[1].tool_calls[0].id = messages[2].tool_call_id = f"call_{i}"
    return messages


class _Renders:
    """The prefix functions a cached answer is given, each call counted by what it rendered."""

    def __init__(self, provider: int, *, slides: bool = False, cuts: bool = False) -> None:
        self.provider, self.slides, self.cuts = provider, slides, cuts
        self.calls: list[tuple[str, int]] = []

    def build(self, provider, messages, path):
        self.calls.append(("whole", len(messages)))
        return render_prefix(provider, messages, path)

    def extend(self, provider, prefix, messages, path):
        self.calls.append(("extended", len(messages)))
        return extend_prefix(provider, prefix, messages, path)

    def slide(self, provider, prefix, dropped, kept, path):
        self.calls.append(("slid", len(dropped)))
        return slide_prefix(provider, prefix, dropped, kept, path)

    def cut(self, provider, prefix, removed, kept, path):
        self.calls.append(("cut", len(removed)))
        return cut_prefix(provider, prefix, removed, kept, path)

    def prefix_of(self, answer):
        slide, cut = (self.slide if self.slides else None), (self.cut if self.cuts else None)
        return answer.rendered_prefix(self.provider, "chat_request", self.build, self.extend, slide, cut)


_STATE = HistoryState(1_000, 100, "m", "", 0, None, None, None, None, None, 0, None, 6, 6)
_SNAPSHOT = Snapshot(budget=Budget(900), summary=None, entries=())


def _stored(cache: LoadCache, messages, **extension):
    """`messages` kept as thread "t"'s answer (`extension`: what it extends, and how)."""
    return cache.store(
        "t", "", _STATE, _SNAPSHOT, LoadResult(messages, history_pb2.HistoryDecisionReport()), **extension
    )


@pytest.mark.parametrize("summary", [False, True])
@pytest.mark.parametrize(
    "provider",
    [p for p in sorted(SPECS) if SPECS[p].render_messages is not None],
    ids=lambda p: SPECS[p].name,
)
def test_a_history_sliding_past_the_turn_limit_renders_only_the_turns_that_leave_and_come(
    provider: int, summary: bool
) -> None:
    """Each completed turn pushes the oldest out: the prefix is the earlier one slid and extended
    (the left turn and the new one rendered, none of the kept ones), equal to the render from
    scratch, with a round after each turn and with turns completed between rounds. A call id
    used again across the cut (where ids must be unique) is rendered whole."""
    cache = LoadCache()
    renders = _Renders(provider, slides=True)
    calls, prefix_of = renders.calls, renders.prefix_of

    head = [chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_SYSTEM, content="Summary: ...")] if summary else []
    turns = 30
    messages = [*head, *(m for i in range(turns) for m in _own_turn(i))]
    answer = _stored(cache, messages)
    assert prefix_of(answer) is not None
    start = len(head)
    for step, between in enumerate([0, 0, 0, 2, 0, 3, 0, 0]):
        # `between` turns completed with no round between, then one with a round after it.
        for _ in range(between + 1):
            messages = [*head, *messages[start + 4 :], *_own_turn(turns)]
            turns += 1
            answer = _stored(cache, messages, extends=answer, dropped=(start, 4))
        calls.clear()
        assert prefix_of(answer) == render_prefix(provider, messages), step
        assert calls == [("slid", 4 * (between + 1)), ("extended", 4 * (between + 1))], step
    # A turn using the id of a call that is about to leave: ids unique in the conversation are
    # rewritten by their uses before, which the slide changes.
    reused = _own_turn(turns)
    reused[1].tool_calls[0].id = reused[2].tool_call_id = messages[start + 6].tool_call_id
    messages = [*head, *messages[start + 4 :], *reused]
    answer = _stored(cache, messages, extends=answer, dropped=(start, 4))
    assert prefix_of(answer) == render_prefix(provider, messages)  # sent as call_N#2 where unique
    messages = [*head, *messages[start + 4 :], *_own_turn(turns + 1)]
    answer = _stored(cache, messages, extends=answer, dropped=(start, 4))
    calls.clear()
    assert prefix_of(answer) == render_prefix(provider, messages)
    if SPECS[provider].unique_call_ids:
        assert calls == [("slid", 4), ("whole", len(messages))]
    else:
        assert calls == [("slid", 4), ("extended", 4)]


def test_turns_completed_one_after_another_add_their_records_as_parts_never_copying_the_kept_ones():
    cache = LoadCache()
    state = HistoryState(1_000, 100, "m", "", 0, None, None, None, None, None, 0, None, 6, 6)
    snapshot = Snapshot(budget=Budget(900), summary=None, entries=())
    number = 2
    messages = _turn_messages(0)
    answer = _stored(cache, messages)
    first = answer.framed_parts(number)
    for i in range(1, 3 * FRAMED_PARTS):
        messages = [*messages, *_turn_messages(i)]
        earlier = answer.framed_parts(number)
        report = history_pb2.HistoryDecisionReport()
        answer = cache.store("t", "", state, snapshot, LoadResult(messages, report), extends=answer)
        parts = answer.framed_parts(number)
        assert b"".join(parts) == repeated_records(number, [m.SerializeToString() for m in messages])
        assert answer.framed(number) == b"".join(parts)
        assert len(parts) <= FRAMED_PARTS
        if len(parts) > 1:  # the kept parts themselves, not copies
            assert all(a is b for a, b in zip(parts, earlier, strict=False))
    assert first[0] is not answer.framed_parts(number)[0]  # joined once the parts were too many


@pytest.mark.parametrize("summary", [False, True])
def test_turns_that_leave_are_cut_from_the_first_part_the_later_parts_kept_as_they_are(summary: bool):
    """Past the turn limit, each completed turn adds its part and takes the oldest turn's
    records off the first part (the summary's record stays first): the later parts are the
    kept ones, not copies."""
    cache = LoadCache()
    state = HistoryState(1_000, 100, "m", "", 0, None, None, None, None, None, 0, None, 6, 6)
    snapshot = Snapshot(budget=Budget(900), summary=None, entries=())
    number = 2
    head = [chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_SYSTEM, content="Summary: ...")] if summary else []
    messages = [*head, *(m for i in range(40) for m in _turn_messages(i))]
    answer = _stored(cache, messages)
    answer.framed_parts(number)
    for i in range(40, 40 + 3 * FRAMED_PARTS):
        messages = [*head, *messages[len(head) + 4 :], *_turn_messages(i)]
        earlier = answer.framed_parts(number)
        report = history_pb2.HistoryDecisionReport()
        answer = cache.store(
            "t",
            "",
            state,
            snapshot,
            LoadResult(messages, report),
            extends=answer,
            dropped=(len(head), 4),
        )
        parts = answer.framed_parts(number)
        assert b"".join(parts) == repeated_records(number, [m.SerializeToString() for m in messages])
        assert len(parts) <= FRAMED_PARTS
        if len(parts) > 1:
            assert all(a is b for a, b in zip(parts[1:-1], earlier[1:], strict=True))


@pytest.mark.parametrize("summary", [False, True])
@pytest.mark.parametrize(
    "provider",
    [p for p in sorted(SPECS) if SPECS[p].render_messages is not None],
    ids=lambda p: SPECS[p].name,
)
def test_a_cleared_history_renders_only_the_turns_it_sends_anew(provider: int, summary: bool) -> None:
    """A cleared history clears one more tool result each completed turn: the messages from that
    result on are sent anew. The prefix is the earlier one cut before that result's turn and
    extended with the turns from there (none of the kept ones rendered), equal to the render from
    scratch."""
    cache = LoadCache()
    renders = _Renders(provider, cuts=True)
    calls, prefix_of = renders.calls, renders.prefix_of

    head = [chat_pb2.ChatMessage(role=chat_pb2.CHAT_ROLE_SYSTEM, content="Summary: ...")] if summary else []
    turns = [_own_turn(i) for i in range(20)]

    def flat():
        return [*head, *(m for turn in turns for m in turn)]

    keep = 3
    for turn in turns[:-keep]:
        turn[2].content = "[cleared]"
    messages = flat()
    answer = _stored(cache, messages)
    assert prefix_of(answer) is not None
    for step in range(6):
        old = messages
        turns.append(_own_turn(len(turns)))
        cleared = turns[-keep - 1]  # its result now older than the newest `keep`
        cleared[2] = chat_pb2.ChatMessage()
        cleared[2].CopyFrom(_own_turn(len(turns) - keep - 1)[2])
        cleared[2].content = "[cleared]"
        messages = flat()
        replaced = len(old) - (len(head) + 4 * (len(turns) - keep - 1) + 2)
        answer = _stored(cache, messages, extends=answer, replaced=replaced)
        calls.clear()
        assert prefix_of(answer) == render_prefix(provider, messages), step
        # The cleared result's turn and those after it taken off, and sent anew with the new turn.
        assert calls == [("cut", 4 * keep), ("extended", 4 * (keep + 1))], (step, calls)
