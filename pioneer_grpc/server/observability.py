"""One span and one metrics sample per RPC: the outermost interceptor.

The span continues the caller's trace from W3C `traceparent` metadata, is named
`package.Service/Method` and carries the RPC semantic-convention attributes;
the use cases add theirs to it and open child spans under it. The code recorded
is the one the client receives, including the error interceptor's mapping and
the auth interceptor's rejections (this one wraps both).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import grpc
from grpc.aio import ServerInterceptor
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from pioneer_grpc.server.methods import OTHER
from pioneer_grpc.telemetry import SpanScope, Telemetry
from pioneer_grpc.tenants import CALLER

HEALTH_PREFIX = "/grpc.health.v1.Health/"
_PROPAGATOR = TraceContextTextMapPropagator()
# The W3C trace-context headers; a call without them starts a trace (an empty parent context).
_TRACE_HEADERS = frozenset(_PROPAGATOR.fields)
_NO_PARENT = Context()
# Server-side codes that mean the server failed (RPC semantic conventions); others are the caller's.
_SERVER_ERRORS = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)
_CODES = {code.value[0]: code for code in grpc.StatusCode}


def _code_of(context: grpc.aio.ServicerContext, exc: BaseException | None) -> grpc.StatusCode:
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return grpc.StatusCode.CANCELLED
    raw = context.code()
    if isinstance(raw, grpc.StatusCode):
        return raw
    if isinstance(raw, int):
        return _CODES.get(raw, grpc.StatusCode.UNKNOWN)
    return grpc.StatusCode.OK if exc is None else grpc.StatusCode.UNKNOWN


def _with_peer(attributes: dict[str, Any], context: grpc.aio.ServicerContext) -> dict[str, Any]:
    # "ipv4:127.0.0.1:50514" or "ipv6:[::1]:50514"
    kind, _, rest = (context.peer() or "").partition(":")
    host, _, port = rest.rpartition(":")
    if kind in ("ipv4", "ipv6") and port.isdigit():
        attributes["network.peer.address"] = host.strip("[]")
        attributes["network.peer.port"] = int(port)
    return attributes


def _parent(context: grpc.aio.ServicerContext) -> Context:
    """The caller's trace from its traceparent (and tracestate) metadata; none: a new trace."""
    carrier = {
        k: v for k, v in (context.invocation_metadata() or ()) if k in _TRACE_HEADERS and isinstance(v, str)
    }
    return _PROPAGATOR.extract(carrier) if carrier else _NO_PARENT


_UNTRACED: AbstractContextManager[trace.Span] = nullcontext(trace.INVALID_SPAN)


class _Call:
    """What every RPC of one method records, however it ends (one per method, reused)."""

    def __init__(self, telemetry: Telemetry, full_method: str, traced: bool) -> None:
        self.telemetry = telemetry
        self.name = full_method.lstrip("/")
        self.service, _, self.method = self.name.partition("/")
        if not self.method:
            self.service = self.method = self.name
        self.traced = traced and telemetry.tracing
        self.attributes = {"rpc.system": "grpc", "rpc.service": self.service, "rpc.method": self.method}

    def span(self, context: grpc.aio.ServicerContext) -> AbstractContextManager[trace.Span]:
        if not self.traced:
            return _UNTRACED
        return SpanScope(
            self.telemetry.tracer,
            self.name,
            _with_peer(dict(self.attributes), context),
            SpanKind.SERVER,
            _parent(context),
            errors=False,
        )

    def done(self, span: trace.Span, code: grpc.StatusCode, started: float) -> None:
        self.telemetry.metrics.rpc_ended()
        caller = CALLER.get()
        self.telemetry.metrics.rpc_handled(
            self.service,
            self.method,
            code.name,
            time.perf_counter() - started,
            "" if caller is None else caller.of_token,
        )
        if span.is_recording():
            span.set_attribute("rpc.grpc.status_code", code.value[0])
            if code in _SERVER_ERRORS:
                span.set_status(Status(StatusCode.ERROR, code.name))


def _wrap_unary(call: _Call, behavior: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext) -> Any:
        started = time.perf_counter()
        call.telemetry.metrics.rpc_started()
        with call.span(context) as span:
            failure: BaseException | None = None
            try:
                return await behavior(request, context)
            except BaseException as exc:
                failure = exc
                raise
            finally:
                call.done(span, _code_of(context, failure), started)

    return wrapped


def _wrap_stream(
    call: _Call, behavior: Callable[..., AsyncIterator[Any]]
) -> Callable[..., AsyncIterator[Any]]:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        started = time.perf_counter()
        call.telemetry.metrics.rpc_started()
        with call.span(context) as span:
            failure: BaseException | None = None
            try:
                async for item in behavior(request, context):
                    yield item
            except BaseException as exc:
                failure = exc
                raise
            finally:
                call.done(span, _code_of(context, failure), started)

    return wrapped


class ObservabilityInterceptor(ServerInterceptor):
    """Spans (not for health checks) and grpc_server_* metrics (for every RPC).

    `known_methods` are the methods the server serves, each recorded under its
    name; any other name (a call the auth interceptor rejected before anyone
    knew whether the method exists) is recorded as `other`.
    """

    def __init__(self, telemetry: Telemetry, known_methods: frozenset[str]) -> None:
        self._telemetry = telemetry
        self._calls = {
            method: _Call(telemetry, method, traced=not method.startswith(HEALTH_PREFIX))
            for method in known_methods
        }
        self._other = _Call(telemetry, OTHER, traced=True)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return handler
        call = self._calls.get(details.method, self._other)
        deserializer, serializer = handler.request_deserializer, handler.response_serializer
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                _wrap_unary(call, handler.unary_unary), deserializer, serializer
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                _wrap_unary(call, handler.stream_unary), deserializer, serializer
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                _wrap(call, handler.unary_stream), deserializer, serializer
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                _wrap(call, handler.stream_stream), deserializer, serializer
            )
        return handler


def _wrap(call: _Call, behavior: Callable[..., Any]) -> Callable[..., Any]:
    """A streaming handler is an async generator, or a coroutine calling context.write()."""
    return (
        _wrap_stream(call, behavior) if inspect.isasyncgenfunction(behavior) else _wrap_unary(call, behavior)
    )
