"""Failed tool results (ConversationEntry.is_error) are counted once, when stored: by an append, a
turn's completion with entries, or a round; a repeated batch stores nothing and counts nothing."""

from __future__ import annotations

from pioneer_grpc.service import history
from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.turn import prepare_turn
from pioneer_grpc.telemetry import Metrics, Telemetry
from pioneer_grpc.v1 import history_pb2
from tests.fast.test_lifecycle import _round
from tests.store.contract.rows import call, result, user


def _failed(entry_id: str, call_id: str, turn_id: str = "") -> history_pb2.ConversationEntry:
    entry = result(entry_id, turn_id, call_id)
    entry.is_error = True
    return entry


async def test_failed_tool_results_are_counted_once_as_they_are_stored(ctx: ServiceContext) -> None:
    ctx.telemetry = Telemetry(metrics=Metrics())
    registry = ctx.telemetry.metrics.registry

    def counted() -> float | None:
        return registry.get_sample_value("pioneer_failed_tool_results_total")

    await history.create_thread(ctx, "t", history_pb2.ThreadConfig(model="claude-sonnet-4-5"))
    appended = [
        user("q1", "u1"),
        call("c1", "u1", "k1"),
        _failed("r1", "k1", "u1"),
        call("c2", "u1", "k2"),
        result("r2", "u1", "k2"),
    ]
    await history.append_entries(ctx, "t", appended)
    assert counted() == 1
    await history.append_entries(ctx, "t", appended)  # a retried batch: nothing new stored
    assert counted() == 1
    await history.complete_turn(ctx, "t", "u1", [call("c3", "", "k3"), _failed("r3", "k3")])
    assert counted() == 2
    await prepare_turn(ctx, _round("t", "u2", user("q4", ""), call("c4", "", "k4"), _failed("r4", "k4")))
    assert counted() == 3
    await prepare_turn(ctx, _round("t", "u2", user("q4", ""), call("c4", "", "k4"), _failed("r4", "k4")))
    assert counted() == 3
