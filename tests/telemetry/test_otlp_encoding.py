"""The span exporter's own wire encoding is the message the SDK's encoder builds, for every shape of span."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from pioneer_grpc.telemetry import SpanScope, tracing
from pioneer_grpc.telemetry.otlp import SpanEncoder

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _provider(exporter: InMemorySpanExporter, name: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": name, "service.version": "1.2"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def _spans() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    ours = _provider(exporter, "pioneer-grpc").get_tracer(tracing.INSTRUMENTATION, "0.1")
    other_scope = _provider(exporter, "pioneer-grpc").get_tracer("another", schema_url="https://x/1.0")
    other_resource = _provider(exporter, "replica").get_tracer(tracing.INSTRUMENTATION)
    remote = TraceContextTextMapPropagator().extract({"traceparent": TRACEPARENT, "tracestate": "a=1,b=two"})
    attributes = {
        "rpc.system": "grpc",
        "network.peer.port": 50514,
        "negative": -7,
        "large": 2**62,
        "ratio": 0.25,
        "flag": True,
        "off": False,
        "names": ("a", "b"),
        "numbers": (1, -2),
        "empty": "",
        "unicode": "thé",
    }
    for round_ in range(3):
        parent = remote if round_ % 2 else None
        with SpanScope(ours, "pioneer.v1.TurnService/PrepareTurn", attributes, trace.SpanKind.SERVER, parent):
            with SpanScope(ours, "pioneer.compile", {tracing.COMPILE_CACHE: "hit"}) as span:
                span.set_status(trace.Status(trace.StatusCode.ERROR, "quoted" if round_ else None))
            with other_scope.start_as_current_span("with-event") as span:
                span.add_event("happened", {"n": round_})
            with other_resource.start_as_current_span("elsewhere") as span:
                span.set_status(trace.Status(trace.StatusCode.OK))
            with SpanScope(ours, "x" * 300, {"long": "y" * 300}):
                pass
    return list(exporter.get_finished_spans())


def test_the_encoding_is_the_sdks_message():
    spans = _spans()
    ours = ExportTraceServiceRequest.FromString(SpanEncoder().request(spans))
    assert ours == encode_spans(spans)
    assert sum(len(s.spans) for r in ours.resource_spans for s in r.scope_spans) == len(spans) == 15


def test_a_reused_encoder_gives_the_same_bytes():
    spans = _spans()
    encoder = SpanEncoder()
    first = encoder.request(spans)
    assert encoder.request(spans) == first


def test_a_step_that_fails_records_its_type_and_the_rpc_span_does_not():
    exporter = InMemorySpanExporter()
    tracer = _provider(exporter, "pioneer-grpc").get_tracer(tracing.INSTRUMENTATION)
    with pytest.raises(KeyError):
        with SpanScope(tracer, "rpc", errors=False):
            with SpanScope(tracer, "step"):
                raise KeyError("content the request carried")
    step, rpc = exporter.get_finished_spans()
    assert step.attributes == {"error.type": "KeyError"}
    assert step.status.status_code == trace.StatusCode.ERROR and not step.status.description
    assert not step.events
    assert rpc.attributes == {} and rpc.status.status_code == trace.StatusCode.UNSET
    assert step.parent is not None and step.parent.span_id == rpc.context.span_id
    assert not trace.get_current_span().is_recording()  # both were detached


def test_batch_sizes_yield_to_the_environment(monkeypatch):
    monkeypatch.delenv("OTEL_BSP_MAX_QUEUE_SIZE", raising=False)
    monkeypatch.delenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", raising=False)
    assert tracing._batch_sizes() == (tracing.QUEUE_SIZE, tracing.EXPORT_BATCH)
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "100")
    assert tracing._batch_sizes() == (None, None)
