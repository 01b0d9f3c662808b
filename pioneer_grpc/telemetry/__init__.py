"""Traces and metrics of one server: what the service layer reports, and where it goes.

`Telemetry` is built once per server (server/app.py) and hung on the
ServiceContext. Off by default: no tracer provider, `NoMetrics`, no cache-break
tracking, and `span()` hands out one shared inert span, so a request pays
nothing for instrumentation it did not ask for. Cores never import this.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType

from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util.types import AttributeValue

from pioneer_grpc import __version__
from pioneer_grpc.telemetry import tracing
from pioneer_grpc.telemetry.cache_breaks import CacheBreakTracker, Round
from pioneer_grpc.telemetry.metrics import Metrics, NoMetrics
from pioneer_grpc.v1 import prompt_pb2

__all__ = ["Metrics", "NoMetrics", "Round", "SpanScope", "Telemetry", "tracing"]

log = logging.getLogger(__name__)
# Longest a stop waits for queued spans to reach the collector.
FLUSH_SECONDS = 2.0

_INERT: AbstractContextManager[trace.Span] = nullcontext(trace.INVALID_SPAN)
_ERROR = trace.Status(trace.StatusCode.ERROR)


class SpanScope:
    """A span started on entry, current inside the block and ended on exit.

    What `start_as_current_span` does, in one object instead of three nested
    generator context managers: a round opens half a dozen of these. Exception
    messages may quote what a request carried, so a failing block records the
    error's type only (no exception event, no status description), and nothing
    when `errors` is false (the RPC's span records the code the caller receives).
    """

    __slots__ = ("_attributes", "_context", "_errors", "_kind", "_name", "_span", "_token", "_tracer")

    def __init__(
        self,
        tracer: trace.Tracer,
        name: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        kind: trace.SpanKind = trace.SpanKind.INTERNAL,
        parent: context.Context | None = None,
        errors: bool = True,
    ) -> None:
        self._tracer = tracer
        self._errors = errors
        self._name = name
        self._attributes = attributes
        self._kind = kind
        self._context = parent

    def __enter__(self) -> trace.Span:
        span = self._span = self._tracer.start_span(
            self._name,
            self._context,
            self._kind,
            self._attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        self._token = context.attach(trace.set_span_in_context(span))
        return span

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        span = self._span
        if exc is not None and self._errors:
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(_ERROR)
        context.detach(self._token)
        span.end()


class Telemetry:
    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        metrics: NoMetrics | None = None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.tracing = tracer_provider is not None
        self.tracer: trace.Tracer = (
            tracer_provider.get_tracer(tracing.INSTRUMENTATION, __version__)
            if tracer_provider is not None
            else trace.NoOpTracer()
        )
        self.metrics = metrics or NoMetrics()
        self.enabled = self.tracing or self.metrics.enabled
        self.cache_breaks = CacheBreakTracker() if self.enabled else None
        # Set once the Prometheus endpoint listens.
        self.metrics_port = 0

    def span(
        self, name: str, attributes: Mapping[str, AttributeValue] | None = None
    ) -> AbstractContextManager[trace.Span]:
        """A child of the current span, current inside the block; an inert span when tracing is off."""
        if not self.tracing:
            return _INERT
        return SpanScope(self.tracer, name, attributes)

    def current_span(self) -> trace.Span:
        """The span of the RPC (or of the block) being served; inert when tracing is off."""
        return trace.get_current_span() if self.tracing else trace.INVALID_SPAN

    def round_recorded(self, thread_id: str, manifest: prompt_pb2.PromptManifest) -> Round | None:
        """A manifest was recorded on the thread: count the round and name a cache break, if any."""
        if self.cache_breaks is None:
            return None
        observed = self.cache_breaks.observe(thread_id, manifest)
        self.metrics.round(observed.break_section_id)
        return observed

    async def close(self, flush_seconds: float = FLUSH_SECONDS) -> None:
        """Stops the metrics endpoint and exports the spans still queued, for at most `flush_seconds`.

        The exporter retries an unreachable collector for up to its own timeout
        and more; the flush runs in a daemon thread of its own (not the loop's
        executor, which the interpreter would wait for at exit) and is given up
        after the bound, with a log line: a stop stays within its grace period.
        """
        if isinstance(self.metrics, Metrics):
            self.metrics.close()
        if self.tracer_provider is None:
            return
        provider, loop = self.tracer_provider, asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def finished() -> None:
            if not done.done():
                done.set_result(None)

        def shutdown() -> None:
            with contextlib.suppress(Exception):
                provider.shutdown()
            with contextlib.suppress(RuntimeError):  # the loop closed first
                loop.call_soon_threadsafe(finished)

        threading.Thread(target=shutdown, name="trace-flush", daemon=True).start()
        try:
            await asyncio.wait_for(asyncio.shield(done), flush_seconds)
        except TimeoutError:
            log.warning("spans not exported: the collector did not take them within %.1fs", flush_seconds)
