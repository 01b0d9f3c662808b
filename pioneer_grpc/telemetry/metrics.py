"""Prometheus metrics of one server, in a registry of its own, served on --metrics-listen.

`Metrics` records; `NoMetrics` has the same methods and records nothing (the
default, so callers never ask whether metrics are on). Names follow the
conventions of go-grpc-prometheus for the RPC families, `pioneer_*` for the rest.
"""

from __future__ import annotations

import gc
import platform
import threading
from collections.abc import Callable
from importlib import metadata
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, ProcessCollector

from pioneer_grpc import __version__
from pioneer_grpc.telemetry.metrics_http import serve_metrics

RPC_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
SUMMARY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class NoMetrics:
    """Every recording method, doing nothing."""

    enabled = False

    def rpc_handled(self, service: str, method: str, code: str, seconds: float, tenant: str = "") -> None:
        pass

    def history_decision(self, decision: str) -> None:
        pass

    def tool_results_cleared(self, count: int, tokens_saved: int) -> None:
        pass

    def summary_call(self, summarizer: str, seconds: float, failure: str) -> None:
        pass

    def provider_usage(
        self, provider: str, model: str, read: int, write: int, uncached: int, output: int
    ) -> None:
        pass

    def compile_cache(self, hit: bool) -> None:
        pass

    def retention_deleted(self, threads: int, removed_bytes: int) -> None:
        pass

    def failed_tool_results(self, count: int) -> None:
        pass

    def round(self, break_section_id: str) -> None:
        pass

    def rpc_started(self) -> None:
        pass

    def rpc_ended(self) -> None:
        pass

    def watch_serving(self, serving: Callable[[], bool]) -> None:
        pass

    def watch_connections(self, count: Callable[[], int]) -> None:
        pass

    def watch_observers(self, count: Callable[[], int], lags: Callable[[], list[int]]) -> None:
        pass

    def watch_http_connections(self, count: Callable[[], int]) -> None:
        pass

    def http_connection_ended(self, reason: str) -> None:
        pass

    def http_request_refused(self, reason: str) -> None:
        pass


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


class Metrics(NoMetrics):
    enabled = True

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self._handled = Counter(
            "grpc_server_handled",
            "RPCs completed on the server, by status code and by the tenant the call's token names "
            "(the tenants file's names; empty when no token named one).",
            ["grpc_service", "grpc_method", "grpc_code", "tenant"],
            registry=r,
        )
        self._handling = Histogram(
            "grpc_server_handling_seconds",
            "Time from an RPC's start to its end on the server.",
            ["grpc_service", "grpc_method"],
            buckets=RPC_BUCKETS,
            registry=r,
        )
        self._decisions = Counter(
            "pioneer_history_decisions", "History loads, by the decision taken.", ["decision"], registry=r
        )
        self._cleared = Counter(
            "pioneer_tool_results_cleared",
            "Old tool results replaced by a placeholder in history loads.",
            registry=r,
        )
        self._cleared_tokens = Counter(
            "pioneer_tool_results_cleared_tokens",
            "Tokens saved by replacing old tool results with a placeholder.",
            registry=r,
        )
        self._summary_calls = Counter(
            "pioneer_summary_model_calls", "Calls to the summary model.", ["summarizer"], registry=r
        )
        self._summary_failures = Counter(
            "pioneer_summary_model_failures",
            "Summary-model calls that gave no usable summary, by reason.",
            ["summarizer", "reason"],
            registry=r,
        )
        self._summary_seconds = Histogram(
            "pioneer_summary_model_seconds",
            "Latency of summary-model calls.",
            ["summarizer"],
            buckets=SUMMARY_BUCKETS,
            registry=r,
        )
        self._compile_cache = Counter(
            "pioneer_compile_cache_lookups",
            "Prompt compiles, answered from the cache (hit) or not (miss).",
            ["result"],
            registry=r,
        )
        self._rounds = Counter("pioneer_prompt_rounds", "Manifests recorded on a thread's turn.", registry=r)
        self._breaks = Counter(
            "pioneer_prompt_cache_breaks",
            "Rounds whose stable prompt half differs from the thread's previous round, by the first changed "
            "stable section.",
            ["section_id"],
            registry=r,
        )
        self._provider_input = Counter(
            "pioneer_provider_input_tokens",
            "Input tokens providers reported for rounds' bodies (a loop's previous_round_usage), by provider "
            "API, model (registry name, or other) and kind: cache_read, cache_write, uncached.",
            ["provider", "model", "kind"],
            registry=r,
        )
        self._provider_output = Counter(
            "pioneer_provider_output_tokens",
            "Output tokens providers reported for rounds' bodies, by provider API and model.",
            ["provider", "model"],
            registry=r,
        )
        self._retention_threads = Counter(
            "pioneer_retention_deleted_threads",
            "Threads the retention sweeper deleted (no write for their retention).",
            registry=r,
        )
        self._retention_bytes = Counter(
            "pioneer_retention_deleted_bytes",
            "Bytes of what those threads held (entries, summaries, manifests, kept rounds).",
            registry=r,
        )
        self._failed_results = Counter(
            "pioneer_failed_tool_results",
            "Tool results stored that report their tool failed (ConversationEntry.is_error).",
            registry=r,
        )
        # process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds, ... of this process.
        ProcessCollector(registry=r)
        frozen = Gauge(
            "pioneer_gc_frozen_objects",
            "Objects of start-up that full garbage collections no longer walk (0 until the server serves).",
            registry=r,
        )
        frozen.set_function(gc.get_freeze_count)
        self._in_flight = Gauge(
            "pioneer_rpcs_in_flight", "RPCs started and not yet ended (health checks included).", registry=r
        )
        self._serving = Gauge(
            "pioneer_serving",
            "1 while health answers SERVING; 0 when the database cannot be written or the server stops.",
            registry=r,
        )
        self._connections = Gauge(
            "pioneer_grpc_connections", "Open TCP connections to this process's gRPC port.", registry=r
        )
        self._http_connections = Gauge(
            "pioneer_http_connections",
            "Open connections to the HTTP listener (TLS handshakes included).",
            registry=r,
        )
        self._http_ended = Counter(
            "pioneer_http_connections_ended",
            "HTTP connections the listener ended itself, by reason (over_limit, header_timeout, "
            "body_timeout, body_unread, tls_handshake).",
            ["reason"],
            registry=r,
        )
        self._http_refused = Counter(
            "pioneer_http_requests_refused",
            "HTTP requests refused before routing, by reason (HOST_NOT_ALLOWED, NON_UTF8_HEADER).",
            ["reason"],
            registry=r,
        )
        self._observers = Gauge("pioneer_watch_observers", "Manifest observers connected.", registry=r)
        self._lag_max = Gauge(
            "pioneer_watch_observer_lag_events_max",
            "Events queued for the observer furthest behind.",
            registry=r,
        )
        self._lag_sum = Gauge(
            "pioneer_watch_observer_lag_events", "Events queued for all observers together.", registry=r
        )
        Info("pioneer_build", "The server's build.", registry=r).info(
            {
                "version": __version__,
                "python_version": platform.python_version(),
                "grpcio_version": _version("grpcio"),
            }
        )
        self._http: WSGIServer | None = None
        self._http_thread: threading.Thread | None = None

    def rpc_handled(self, service: str, method: str, code: str, seconds: float, tenant: str = "") -> None:
        self._handled.labels(service, method, code, tenant).inc()
        self._handling.labels(service, method).observe(seconds)

    def history_decision(self, decision: str) -> None:
        self._decisions.labels(decision).inc()

    def tool_results_cleared(self, count: int, tokens_saved: int) -> None:
        if count:
            self._cleared.inc(count)
            self._cleared_tokens.inc(tokens_saved)

    def provider_usage(
        self, provider: str, model: str, read: int, write: int, uncached: int, output: int
    ) -> None:
        for kind, tokens in (("cache_read", read), ("cache_write", write), ("uncached", uncached)):
            self._provider_input.labels(provider, model, kind).inc(tokens)
        self._provider_output.labels(provider, model).inc(output)

    def summary_call(self, summarizer: str, seconds: float, failure: str) -> None:
        self._summary_calls.labels(summarizer).inc()
        self._summary_seconds.labels(summarizer).observe(seconds)
        if failure:
            self._summary_failures.labels(summarizer, failure).inc()

    def retention_deleted(self, threads: int, removed_bytes: int) -> None:
        self._retention_threads.inc(threads)
        self._retention_bytes.inc(removed_bytes)

    def failed_tool_results(self, count: int) -> None:
        if count:
            self._failed_results.inc(count)

    def compile_cache(self, hit: bool) -> None:
        self._compile_cache.labels("hit" if hit else "miss").inc()

    def round(self, break_section_id: str) -> None:
        self._rounds.inc()
        if break_section_id:
            self._breaks.labels(break_section_id).inc()

    def rpc_started(self) -> None:
        self._in_flight.inc()

    def rpc_ended(self) -> None:
        self._in_flight.dec()

    def watch_serving(self, serving: Callable[[], bool]) -> None:
        self._serving.set_function(lambda: 1.0 if serving() else 0.0)

    def watch_connections(self, count: Callable[[], int]) -> None:
        self._connections.set_function(count)

    def watch_http_connections(self, count: Callable[[], int]) -> None:
        self._http_connections.set_function(count)

    def http_connection_ended(self, reason: str) -> None:
        self._http_ended.labels(reason).inc()

    def http_request_refused(self, reason: str) -> None:
        self._http_refused.labels(reason).inc()

    def watch_observers(self, count: Callable[[], int], lags: Callable[[], list[int]]) -> None:
        self._observers.set_function(count)
        self._lag_max.set_function(lambda: max(lags(), default=0))
        self._lag_sum.set_function(lambda: sum(lags()))

    def serve(self, listen: str, token: str = "") -> int:
        """Starts the HTTP endpoint (a daemon thread); returns its port. A token: scrapes must send it."""
        host, _, port = listen.rpartition(":")
        self._http, self._http_thread = serve_metrics(self.registry, host.strip("[]"), int(port), token)
        return int(self._http.server_port)

    def close(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
