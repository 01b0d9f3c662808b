"""Spans of one PrepareTurn: under the caller's trace, with the attributes operators filter on, no content."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from pioneer_grpc.client import RpcFailure, user_entry
from pioneer_grpc.telemetry import Telemetry
from pioneer_grpc.v1 import prompt_pb2, turn_service_pb2
from tests.support import eventually, failure
from tests.telemetry.rounds import MODEL, Rounds

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PARENT_ID = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE_ID:032x}-{PARENT_ID:016x}-01"
SECRET = "MARKER-do-not-trace-7f3a"

CHILDREN = {
    "pioneer.compile",
    "pioneer.history.append",
    "pioneer.history.load",
    "pioneer.history.summarize",
    "pioneer.manifest.record",
    "pioneer.provider.render",
}


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def traced_server(server_factory, exporter, monkeypatch):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    import tests.conftest as shared

    original = shared.start_server
    monkeypatch.setattr(shared, "start_server", lambda config: original(config, tracer_provider=provider))
    return await server_factory(seed_bootstrap_files=True)  # the test edits the seeded SOUL.md


def _every_value(span: ReadableSpan) -> list[str]:
    values = [span.name, *(str(v) for v in (span.attributes or {}).values())]
    for event in span.events:
        values += [event.name, *(str(v) for v in (event.attributes or {}).values())]
    values += [str(v) for v in span.resource.attributes.values()]
    return values


async def _seed_long_thread(rounds: Rounds, thread_id: str) -> None:
    """Over its 80% threshold (budget 2,000 tokens): the next load summarizes."""
    await rounds.thread(thread_id, max_context_tokens=3000, response_reserve_tokens=1000)
    for i in range(12):
        await rounds.completed_turn(
            thread_id,
            f"seed-{i:02d}",
            f"Question {i} about the deployment of service {i}, {SECRET}. "
            + "We decided to use Postgres. " * 8,
            f"Answer {i}: updated config/service_{i}.toml and restarted it. " + "The rollout went fine. " * 8,
        )


async def test_one_prepare_turn_is_a_span_tree_under_the_callers_trace(traced_server, exporter):
    rounds = Rounds(await traced_server.client())
    await _seed_long_thread(rounds, "t-trace")
    # A first round of this thread (no history load), so the traced one can be compared with it.
    await rounds.compile_on("t-trace", "turn-1", extra_system=f"Note {SECRET}")
    soul = traced_server.home / "SOUL.md"
    soul.write_text(soul.read_text() + "\nBe brief.\n")
    exporter.clear()

    reply = await rounds.prepare(
        "t-trace",
        "turn-2",
        f"second {SECRET}",
        extra_system=f"Note {SECRET}",
        metadata=[("traceparent", TRACEPARENT)],
    )

    spans = [s for s in exporter.get_finished_spans() if s.context.trace_id == TRACE_ID]
    [root] = [s for s in spans if s.name == "pioneer.v1.TurnService/PrepareTurn"]
    assert root.kind == SpanKind.SERVER
    assert root.parent is not None
    assert root.parent.span_id == PARENT_ID
    assert root.parent.is_remote
    assert root.attributes is not None
    assert {
        k: root.attributes[k] for k in ("rpc.system", "rpc.service", "rpc.method", "rpc.grpc.status_code")
    } == {
        "rpc.system": "grpc",
        "rpc.service": "pioneer.v1.TurnService",
        "rpc.method": "PrepareTurn",
        "rpc.grpc.status_code": 0,
    }
    assert root.attributes["network.peer.address"] == "127.0.0.1"
    assert root.attributes["pioneer.thread.id"] == "t-trace"
    assert root.attributes["gen_ai.conversation.id"] == "t-trace"
    assert root.attributes["pioneer.turn.id"] == "turn-2"
    assert root.attributes["gen_ai.request.model"] == MODEL
    assert root.attributes["pioneer.prompt.cache_break"] is True
    assert root.attributes["pioneer.prompt.cache_break_section_id"] == "soul_core"

    by_name = {s.name: s for s in spans if s is not root}
    assert CHILDREN <= set(by_name)
    summarize = by_name["pioneer.history.summarize"]
    load = by_name["pioneer.history.load"]
    assert summarize.parent is not None
    assert summarize.parent.span_id == load.context.span_id
    for name in CHILDREN - {"pioneer.history.summarize"}:
        parent = by_name[name].parent
        assert parent is not None, name
        assert parent.span_id == root.context.span_id, name

    def attrs(name: str) -> dict:
        return dict(by_name[name].attributes or {})

    manifest = reply.manifest
    assert attrs("pioneer.compile")["pioneer.compile.cache"] == "miss"
    assert attrs("pioneer.compile")["pioneer.prompt.fingerprint_stable"] == manifest.fingerprint_stable
    assert attrs("pioneer.history.append")["pioneer.append.entries"] == 1
    report = reply.history_report
    load_attrs = attrs("pioneer.history.load")
    assert load_attrs["pioneer.history.decision"] == "summarized"
    assert load_attrs["pioneer.history.tokens_before"] == report.tokens_before > 1600
    assert load_attrs["pioneer.history.tokens_after"] == report.tokens_after < report.tokens_before
    assert load_attrs["pioneer.history.summary_use"] == "created"
    assert load_attrs["pioneer.summarizer.name"] == "extractive"
    summarize_attrs = attrs("pioneer.history.summarize")
    assert summarize_attrs["pioneer.summarizer.name"] == "extractive"
    assert summarize_attrs["pioneer.summarizer.outcome"] == "ok"
    assert summarize_attrs["pioneer.summarizer.latency_ms"] >= 0
    record = attrs("pioneer.manifest.record")
    assert record["pioneer.manifest.event_id"] == reply.manifest_event_id
    # A cache break is named on the RPC's span (above), once the round committed.
    assert "pioneer.prompt.cache_break_section_id" not in record
    assert attrs("pioneer.provider.render") == {
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": MODEL,
    }

    everything = [value for span in exporter.get_finished_spans() for value in _every_value(span)]
    assert not [value for value in everything if SECRET in value]
    assert SECRET in reply.provider_body_json  # the marker did reach the model's request


async def test_a_call_without_traceparent_starts_a_trace_and_health_is_not_traced(traced_server, exporter):
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    # Health is not a pioneer RPC: the client has no method for it, so the raw stub asks.
    await health_pb2_grpc.HealthStub(traced_server.channel()).Check(health_pb2.HealthCheckRequest())
    rounds = Rounds(await traced_server.client())
    await rounds.thread("t-plain")
    [span] = exporter.get_finished_spans()
    assert span.name == "pioneer.v1.HistoryService/CreateThread"
    assert span.parent is None


async def test_a_failed_rpc_carries_its_code(traced_server, exporter):
    import grpc

    rounds = Rounds(await traced_server.client())
    failed = await failure(rounds.prepare("", "turn-1", "hello"))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    # An aborted call's status leaves before its handler unwinds, so the span may end just after.
    await eventually(lambda: len(exporter.get_finished_spans()) > 0, what="the failed call's span ends")
    [span] = exporter.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes["rpc.grpc.status_code"] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    # The caller's mistake, not the server's: the span is not an error.
    assert span.status.status_code == StatusCode.UNSET


async def test_without_an_endpoint_nothing_is_traced(server):
    telemetry: Telemetry = server.ctx.telemetry
    assert not telemetry.tracing
    assert not telemetry.enabled
    assert telemetry.tracer_provider is None
    assert not telemetry.current_span().is_recording()
    with telemetry.span("pioneer.compile") as span:
        assert not span.is_recording()


async def test_a_failing_step_records_the_error_type_and_never_its_message(traced_server, exporter):
    rounds = Rounds(await traced_server.client())
    await rounds.thread("t-fail")
    exporter.clear()
    with pytest.raises(RpcFailure):
        # A workspace_root outside the runtime home fails the compile step.
        await rounds.client.prepare_turn(
            turn_service_pb2.PrepareTurnRequest(
                thread_id="t-fail",
                turn_id="turn-1",
                new_entries=[user_entry("u1", "hi")],
                compile_input=prompt_pb2.PromptCompileInput(workspace_root=f"/nowhere/{SECRET}"),
            )
        )
    [compile_span] = [s for s in exporter.get_finished_spans() if s.name == "pioneer.compile"]
    assert compile_span.attributes is not None
    assert compile_span.attributes["error.type"] == "PermissionDenied"
    assert not compile_span.events
    everything = [value for span in exporter.get_finished_spans() for value in _every_value(span)]
    assert not [value for value in everything if SECRET in value]
