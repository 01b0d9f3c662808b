"""The Prometheus endpoint over real HTTP: counters move by exactly what a scripted sequence causes."""

from __future__ import annotations

from types import SimpleNamespace

import grpc
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pioneer_grpc import __version__
from pioneer_grpc.client import RpcFailure
from pioneer_grpc.service import observe
from pioneer_grpc.telemetry import Metrics, NoMetrics, Telemetry
from pioneer_grpc.v1 import history_pb2, manifest_service_pb2, manifest_service_pb2_grpc
from tests.support import eventually, free_port
from tests.telemetry.rounds import Rounds

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(address: str) -> tuple[str, Samples]:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"http://{address}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return response.text, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def labelled(samples: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


TURNS = {"grpc_service": "pioneer.v1.TurnService", "grpc_method": "PrepareTurn"}


async def test_three_rounds_and_one_soul_edit_move_the_counters_by_exactly_that(database_url, server_factory):
    server = await server_factory(
        database_url=database_url, metrics_listen="127.0.0.1:0", seed_bootstrap_files=True
    )
    # Reuse a compile at once (no settling period), so the second round is a cache hit.
    server.ctx.compile_cache.settle_ns = 0
    rounds = Rounds(await server.client())
    await rounds.thread("t-metrics")
    _, before = await scrape(server.running.metrics_address)

    await rounds.prepare("t-metrics", "turn-1", "first question")
    await rounds.prepare("t-metrics", "turn-2", "second question")
    soul = server.home / "SOUL.md"
    soul.write_text(soul.read_text() + "\nAnswer in one sentence.\n")
    await rounds.prepare("t-metrics", "turn-3", "third question")
    with pytest.raises(RpcFailure):
        await rounds.prepare("t-metrics", "", "no turn id")

    text = ""
    after: Samples = {}

    async def all_four_counted() -> bool:
        # An aborted call is counted just after its status leaves: wait for it, then compare exactly.
        nonlocal text, after
        text, after = await scrape(server.running.metrics_address)
        return delta(before, after, "grpc_server_handling_seconds_count", **TURNS) >= 4

    await eventually(all_four_counted, what="the four PrepareTurn calls are counted")
    # No token named a tenant: the label is empty (tests/tenants/test_metric_tenant.py has tenants).
    handled = {**TURNS, "tenant": ""}
    assert delta(before, after, "grpc_server_handled_total", **handled, grpc_code="OK") == 3
    assert delta(before, after, "grpc_server_handled_total", **handled, grpc_code="INVALID_ARGUMENT") == 1
    assert delta(before, after, "grpc_server_handling_seconds_count", **TURNS) == 4
    assert value(after, "grpc_server_handling_seconds_bucket", **TURNS, le="+Inf") == 4
    assert delta(before, after, "pioneer_prompt_rounds_total") == 3
    assert labelled(after, "pioneer_prompt_cache_breaks_total") == {(("section_id", "soul_core"),): 1.0}
    assert delta(before, after, "pioneer_history_decisions_total", decision="full") == 3
    assert delta(before, after, "pioneer_compile_cache_lookups_total", result="miss") == 2
    assert delta(before, after, "pioneer_compile_cache_lookups_total", result="hit") == 1
    assert delta(before, after, "pioneer_summary_model_calls_total", summarizer="extractive") == 0
    [(build, one)] = labelled(after, "pioneer_build_info").items()
    assert one == 1
    assert dict(build)["version"] == __version__
    assert dict(build)["grpcio_version"] == grpc.__version__
    assert "# TYPE grpc_server_handling_seconds histogram" in text
    assert "first question" not in text


async def test_observers_and_their_lag_are_gauges(server_factory):
    server = await server_factory(metrics_listen="127.0.0.1:0")
    # A raw call: the test cancels it on the wire and reads the CANCELLED it is counted with.
    stub = manifest_service_pb2_grpc.ManifestServiceStub(server.channel())
    call = stub.WatchManifests(manifest_service_pb2.WatchManifestsRequest())
    first = await call.read()
    assert first.HasField("heartbeat")  # caught up and subscribed
    _, during = await scrape(server.running.metrics_address)
    assert value(during, "pioneer_watch_observers") == 1
    assert value(during, "pioneer_watch_observer_lag_events_max") == 0
    call.cancel()
    after: Samples = {}

    async def observer_gone() -> bool:
        nonlocal after
        _, after = await scrape(server.running.metrics_address)
        return value(after, "pioneer_watch_observers") == 0

    await eventually(observer_gone, what="the cancelled watch leaves the observers gauge")
    assert (
        value(
            after,
            "grpc_server_handled_total",
            tenant="",
            grpc_service="pioneer.v1.ManifestService",
            grpc_method="WatchManifests",
            grpc_code="CANCELLED",
        )
        == 1
    )


async def test_a_summary_call_is_counted_with_its_summarizer(server_factory):
    server = await server_factory(metrics_listen="127.0.0.1:0")
    rounds = Rounds(await server.client())
    await rounds.thread("t-long", max_context_tokens=3000, response_reserve_tokens=1000)
    for i in range(12):
        await rounds.completed_turn(
            "t-long",
            f"seed-{i:02d}",
            f"Question {i}: " + "we chose Postgres for the store. " * 8,
            f"Answer {i}: edited config/app_{i}.toml. " + "The deploy finished without errors. " * 8,
        )
    _, before = await scrape(server.running.metrics_address)
    reply = await rounds.prepare("t-long", "turn-1", "and now?")
    _, after = await scrape(server.running.metrics_address)
    assert delta(before, after, "pioneer_summary_model_calls_total", summarizer="extractive") == 1
    assert delta(before, after, "pioneer_summary_model_seconds_count", summarizer="extractive") == 1
    failures = labelled(after, "pioneer_summary_model_failures_total")
    decision = "summarized" if not failures else "truncated"
    assert delta(before, after, "pioneer_history_decisions_total", decision=decision) == 1
    assert reply.history_report.summarizer == "extractive"


def test_a_report_with_cleared_tool_results_moves_both_counters():
    telemetry = Telemetry(metrics=Metrics())
    report = history_pb2.HistoryDecisionReport(
        decision=history_pb2.HISTORY_DECISION_CLEARED,
        cleared_tool_results=[history_pb2.ClearedToolResult(), history_pb2.ClearedToolResult()],
        cleared_tokens_saved=480,
    )
    observe.history_loaded(SimpleNamespace(telemetry=telemetry), telemetry.current_span(), report)
    registry = telemetry.metrics.registry
    assert registry.get_sample_value("pioneer_tool_results_cleared_total") == 2
    assert registry.get_sample_value("pioneer_tool_results_cleared_tokens_total") == 480
    assert registry.get_sample_value("pioneer_history_decisions_total", {"decision": "cleared"}) == 1


async def test_cleared_tool_results_of_a_load_are_counted(server_factory):
    """Whatever a tool-heavy load reports cleared, the counters move by exactly that."""
    server = await server_factory(metrics_listen="127.0.0.1:0")
    rounds = Rounds(await server.client())
    await rounds.thread("t-tools", max_context_tokens=3000, response_reserve_tokens=1000)
    for i in range(6):
        await rounds.tool_turn("t-tools", f"seed-{i}", f"notes {i}: " + "task open, owner unknown; " * 60)
    _, before = await scrape(server.running.metrics_address)
    reply = await rounds.prepare("t-tools", "turn-1", "and now?")
    _, after = await scrape(server.running.metrics_address)
    report = reply.history_report
    assert delta(before, after, "pioneer_tool_results_cleared_total") == len(report.cleared_tool_results)
    assert delta(before, after, "pioneer_tool_results_cleared_tokens_total") == report.cleared_tokens_saved
    decision = history_pb2.HistoryDecision.Name(report.decision).removeprefix("HISTORY_DECISION_").lower()
    assert delta(before, after, "pioneer_history_decisions_total", decision=decision) == 1


async def test_without_the_flag_there_is_no_endpoint(server_factory):
    port = free_port()
    server = await server_factory()
    assert server.running.metrics_address == ""
    assert isinstance(server.ctx.telemetry.metrics, NoMetrics)
    assert not server.ctx.telemetry.metrics.enabled
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/metrics")
    # The same port serves metrics once asked to.
    with_flag = await server_factory(metrics_listen=f"127.0.0.1:{port}")
    assert with_flag.running.metrics_address == f"127.0.0.1:{port}"
    _, samples = await scrape(with_flag.running.metrics_address)
    assert labelled(samples, "pioneer_build_info")
