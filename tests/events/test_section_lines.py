"""DiffManifests shows the lines of a section that changed, from the texts kept by fingerprint per
thread (no kept rounds): each distinct text once, nothing written for a section that stays."""

from __future__ import annotations

from sqlalchemy import func, select

from pioneer_grpc.client import turn_ref
from pioneer_grpc.manifests.line_diff import line_changes
from pioneer_grpc.store.section_texts import SectionTextRow
from pioneer_grpc.v1 import history_pb2, provider_service_pb2, turn_service_pb2
from pioneer_grpc.v1 import manifest_service_pb2 as service_pb2
from tests.turn.test_prepare_turn import Client, compile_input, weather_tool

Kind = service_pb2.SectionChangeKind


def test_a_changed_line_is_named_with_where_it_is_on_both_sides() -> None:
    base = "## Rules\nbe brief\nbe kind\nend"
    runs, truncated = line_changes(base, "## Rules\nbe brief\nbe very kind\nend\nnew last")
    assert not truncated
    assert [(r.base_line, r.target_line, list(r.removed_lines), list(r.added_lines)) for r in runs] == [
        (3, 3, ["be kind"], ["be very kind"]),
        (5, 5, [], ["new last"]),
    ]


def test_past_the_cap_the_lines_are_cut_and_said_to_be() -> None:
    runs, truncated = line_changes("", "\n".join(f"line {i}" for i in range(10)), max_lines=4)
    assert truncated
    assert [list(r.added_lines) for r in runs] == [["line 0", "line 1", "line 2", "line 3"]]


async def _round(client: Client, thread_id: str, turn_id: str, extra: str) -> None:
    await client.prepare_turn(
        turn_service_pb2.PrepareTurnRequest(
            thread_id=thread_id,
            turn_id=turn_id,
            new_entries=[
                history_pb2.ConversationEntry(
                    entry_id=f"u-{turn_id}", turn_id=turn_id, role=history_pb2.ENTRY_ROLE_USER, content="hi"
                )
            ],
            compile_input=compile_input(extra),
            tools=[weather_tool()],
            provider=provider_service_pb2.PROVIDER_ANTHROPIC_MESSAGES,
            provider_body_only=True,
        )
    )


async def _text_rows(server, thread_id: str) -> int:
    async with server.ctx.store.engine.connect() as conn:
        where = SectionTextRow.thread_id == thread_id
        return int(await conn.scalar(select(func.count()).select_from(SectionTextRow).where(where)))


async def test_a_changed_section_shows_its_lines_and_a_stable_one_costs_nothing(pg_server, monkeypatch):
    client = Client(pg_server)
    await client.thread("lines")
    writes: list[int] = []
    commit = pg_server.ctx.store.rounds.commit

    def counted(plan):
        writes.append(len(plan.texts))
        return commit(plan)

    monkeypatch.setattr(pg_server.ctx.store.rounds, "commit", counted)
    await _round(client, "lines", "t1", "Project: pioneer\nDate: 2026-11-29\nTeam: gateway")
    first_texts = await _text_rows(pg_server, "lines")
    assert first_texts == writes[0] >= 3  # every section once, with the round's commit
    await _round(client, "lines", "t2", "Project: pioneer\nDate: 2026-11-29\nTeam: gateway")
    assert writes[1:] == [0]  # the same sections: nothing to keep
    await _round(client, "lines", "t3", "Project: pioneer\nDate: 2026-11-30\nTeam: gateway")
    assert writes[2:] == [1]  # only the changed section's new text
    assert await _text_rows(pg_server, "lines") == first_texts + 1

    manifests = await pg_server.client()
    result = await manifests.diff_manifests(base=turn_ref("lines", "t2"), target=turn_ref("lines", "t3"))
    [change] = [c for c in result.changes if c.kind == Kind.SECTION_CHANGE_KIND_CHANGED]
    assert change.section_id == "extra_system"
    assert change.text_kept and not change.lines_truncated
    [run] = change.line_changes
    assert (list(run.removed_lines), list(run.added_lines)) == (["Date: 2026-11-29"], ["Date: 2026-11-30"])
    assert run.base_line == run.target_line >= 2

    await client.delete_thread(thread_id="lines")
    assert await _text_rows(pg_server, "lines") == 0


async def test_an_inline_manifest_of_no_thread_says_its_text_is_not_kept(server):
    client = Client(server)
    await client.thread("inline")
    await _round(client, "inline", "t1", "Date: 2026-11-29")
    await _round(client, "inline", "t2", "Date: 2026-11-30")
    manifests = await server.client()
    target = (await manifests.get_turn_manifest(thread_id="inline", turn_id="t2")).manifest
    target.thread_id = ""
    result = await manifests.diff_manifests(
        base=turn_ref("inline", "t1"), target=service_pb2.ManifestRef(manifest=target)
    )
    [change] = result.changes
    assert change.section_id == "extra_system"
    assert not change.text_kept and list(change.line_changes) == []
