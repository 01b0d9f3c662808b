"""ListThreadTimeline lists every round a PrepareTurn committed, reported or not, on SQLite and
PostgreSQL through a real server: numbered in commit order, a report filling its round in place,
a PrepareTurn sent again the same round, breaks only and paging as before."""

from __future__ import annotations

from pioneer_grpc.v1 import history_pb2, prompt_pb2, provider_service_pb2, turn_service_pb2, usage_pb2

P = provider_service_pb2
USAGE = usage_pb2.ProviderUsage(input_tokens=5_000, cache_read_input_tokens=4_000, output_tokens=50)


def _prepare(turn_id: str, text: str, provider: int) -> turn_service_pb2.PrepareTurnRequest:
    return turn_service_pb2.PrepareTurnRequest(
        thread_id="t",
        turn_id=turn_id,
        new_entries=[
            history_pb2.ConversationEntry(
                entry_id=f"q-{turn_id}", role=history_pb2.ENTRY_ROLE_USER, content=text
            )
        ],
        compile_input=prompt_pb2.PromptCompileInput(
            profile=prompt_pb2.PROMPT_PROFILE_FULL, extra_system="Be brief."
        ),
        provider=provider,  # type: ignore[arg-type]
    )


def _answer(turn_id: str) -> list[history_pb2.ConversationEntry]:
    return [
        history_pb2.ConversationEntry(
            entry_id=f"a-{turn_id}", role=history_pb2.ENTRY_ROLE_ASSISTANT, content="ok"
        )
    ]


async def test_every_committed_round_is_on_the_timeline_and_a_report_fills_its_place(pg_server) -> None:
    client = await pg_server.client()
    await client.create_thread(thread_id="t", config=history_pb2.ThreadConfig(model="claude-sonnet-4-5"))
    first = await client.prepare_turn(_prepare("u1", "Read a.txt", P.PROVIDER_ANTHROPIC_MESSAGES))
    await client.complete_turn(thread_id="t", turn_id="u1", entries=_answer("u1"))
    # Another provider API: the round's prefix broke (RENDERING).
    second = await client.prepare_turn(_prepare("u2", "And b.txt", P.PROVIDER_OPENAI_CHAT_COMPLETIONS))
    await client.complete_turn(thread_id="t", turn_id="u2", entries=_answer("u2"))
    third = await client.prepare_turn(_prepare("u3", "And c.txt", P.PROVIDER_OPENAI_CHAT_COMPLETIONS))
    again = await client.prepare_turn(_prepare("u3", "And c.txt", P.PROVIDER_OPENAI_CHAT_COMPLETIONS))
    assert again.manifest_event_id == third.manifest_event_id  # sent again: the same round
    await client.complete_turn(thread_id="t", turn_id="u3", entries=_answer("u3"), previous_round_usage=USAGE)

    whole = await client.list_thread_timeline(thread_id="t")
    assert (whole.total_rounds, whole.total_breaks, whole.next_page_token) == (3, 1, "")
    assert [r.round for r in whole.rounds] == [1, 2, 3]
    assert [r.usage.turn_id for r in whole.rounds] == ["u1", "u2", "u3"]
    assert [r.usage.manifest_event_id for r in whole.rounds] == [
        first.manifest_event_id,
        second.manifest_event_id,
        third.manifest_event_id,
    ]
    assert [r.usage.HasField("reported") for r in whole.rounds] == [False, False, True]
    assert [r.usage.HasField("report_time") for r in whole.rounds] == [False, False, True]
    assert all(r.usage.HasField("prepare_time") for r in whole.rounds)
    times = [r.usage.prepare_time.ToDatetime() for r in whole.rounds]
    assert times == sorted(times)
    assert [r.usage.turn_message_count for r in whole.rounds] == [1, 1, 1]
    assert [r.usage.provider for r in whole.rounds] == [
        P.PROVIDER_ANTHROPIC_MESSAGES,
        P.PROVIDER_OPENAI_CHAT_COMPLETIONS,
        P.PROVIDER_OPENAI_CHAT_COMPLETIONS,
    ]
    assert all(r.history_decision != history_pb2.HISTORY_DECISION_UNSPECIFIED for r in whole.rounds)
    assert whole.rounds[2].usage.reported == USAGE
    assert whole.rounds[2].usage.HasField("reported_input_cost_usd")
    assert not whole.rounds[0].usage.HasField("expected_input_tokens")
    broke = whole.rounds[1].usage.prefix_break
    assert broke.cause == history_pb2.PREFIX_BREAK_CAUSE_RENDERING
    assert broke == second.history_report.prefix_break

    breaks = await client.list_thread_timeline(thread_id="t", breaks_only=True)
    assert [r.round for r in breaks.rounds] == [2] and breaks.total_rounds == 3
    page = await client.list_thread_timeline(thread_id="t", page_size=2)
    assert [r.round for r in page.rounds] == [1, 2] and page.next_page_token
    rest = await client.list_thread_timeline(thread_id="t", page_size=2, page_token=page.next_page_token)
    assert [r.round for r in rest.rounds] == [3] and rest.next_page_token == ""
    # Usage lists the reported round only.
    usage = await client.list_round_usage(thread_id="t")
    assert [r.turn_id for r in usage.rounds] == ["u3"]
