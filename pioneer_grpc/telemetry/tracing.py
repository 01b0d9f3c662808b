"""OpenTelemetry tracing: the tracer of one server, and the attribute names operators filter on.

Attributes carry ids, decisions, counts and fingerprints, never conversation or
prompt content. Exported over OTLP/gRPC when an endpoint is configured; with
none, no tracer provider exists and spans cost nothing (see Telemetry.span).
"""

from __future__ import annotations

import os

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from pioneer_grpc import __version__

INSTRUMENTATION = "pioneer_grpc"

THREAD_ID = "pioneer.thread.id"
TURN_ID = "pioneer.turn.id"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
PROVIDER_NAME = "gen_ai.provider.name"
HISTORY_DECISION = "pioneer.history.decision"
TOKENS_BEFORE = "pioneer.history.tokens_before"
TOKENS_AFTER = "pioneer.history.tokens_after"
ENTRIES_LOADED = "pioneer.history.entries_loaded"
ENTRIES_KEPT = "pioneer.history.entries_kept"
SUMMARY_USE = "pioneer.history.summary_use"
TOOL_RESULTS_CLEARED = "pioneer.history.tool_results_cleared"
CLEARED_TOKENS_SAVED = "pioneer.history.cleared_tokens_saved"
SUMMARIZER = "pioneer.summarizer.name"
SUMMARIZER_OUTCOME = "pioneer.summarizer.outcome"
SUMMARIZER_LATENCY_MS = "pioneer.summarizer.latency_ms"
COMPILE_CACHE = "pioneer.compile.cache"
FINGERPRINT_STABLE = "pioneer.prompt.fingerprint_stable"
CACHE_BREAK = "pioneer.prompt.cache_break"
CACHE_BREAK_SECTION = "pioneer.prompt.cache_break_section_id"
MANIFEST_EVENT_ID = "pioneer.manifest.event_id"
ENTRIES_APPENDED = "pioneer.append.entries"


# Batches four times the SDK's default: a quarter of the export calls, each still well under
# gRPC's 4 MiB message limit (a span of ours is a few hundred bytes). OTEL_BSP_* still win.
EXPORT_BATCH = 2048
QUEUE_SIZE = 8192


def _batch_sizes() -> tuple[int | None, int | None]:
    """Queue and batch sizes; both None when either variable is set, so the SDK reads and checks them."""
    if os.environ.get("OTEL_BSP_MAX_QUEUE_SIZE") or os.environ.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"):
        return None, None
    return QUEUE_SIZE, EXPORT_BATCH


def otlp_tracer_provider(endpoint: str) -> TracerProvider:
    """Batches spans to an OTLP/gRPC collector (`http://host:4317`; `https://` for TLS).

    The SDK's own environment applies: OTEL_TRACES_SAMPLER (every trace by default,
    or the caller's decision when it sent one), OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_*.
    """
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win, so replicas can be told apart.
    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "pioneer-grpc"}
    resource = Resource.create({**named, "service.version": __version__})
    provider = TracerProvider(resource=resource)
    queue, batch = _batch_sizes()
    processor = BatchSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint), max_queue_size=queue, max_export_batch_size=batch
    )
    provider.add_span_processor(processor)
    return provider
