"""What every HTTP call passes through, as the gRPC interceptors do for theirs.

`EdgeInterceptor` runs before the request body is read (a leading Connect
metadata interceptor): it names the call's request id (the client's
`x-request-id` or a new one, echoed in the response headers), checks the
bearer token, and at the end logs the access line and records the metrics
sample, with the code the client receives. `answered` wraps a servicer method:
it opens the call's span (continuing the caller's W3C trace), and turns a
domain error into the Connect error carrying the same google.rpc details
(ErrorInfo, BadRequest) the gRPC status carries; anything else is INTERNAL with
the request id.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from google.rpc import code_pb2, status_pb2
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from pioneer_grpc import errors, reasons
from pioneer_grpc.server.errors import domain_error_of, internal_rpc_status, rpc_status_of
from pioneer_grpc.server.logs import REQUEST_ID, REQUEST_ID_HEADER, request_id_from
from pioneer_grpc.server.web.details import readable_detail
from pioneer_grpc.telemetry import SpanScope, Telemetry
from pioneer_grpc.tenants import CALLER, TENANT_HEADER, Authority, acting, current_caller

access_log = logging.getLogger("pioneer_grpc.access")
_PROPAGATOR = TraceContextTextMapPropagator()
_NO_PARENT = Context()
# google.rpc codes by number, as gRPC names them (metrics and logs use these names on both edges).
_GRPC_NAMES = {value.number: name for name, value in code_pb2.Code.DESCRIPTOR.values_by_name.items()}
_GRPC_NAMES[code_pb2.CANCELLED] = "CANCELLED"
# Connect names CANCELLED with one L; the others match the gRPC names.
_CONNECT = {code.name.replace("CANCELED", "CANCELLED"): code for code in Code}
_SERVER_ERRORS = frozenset(
    {"UNKNOWN", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS"}
)


def connect_error(status: status_pb2.Status) -> ConnectError:
    """The Connect error of a google.rpc.Status: same code, message and details, each with its JSON form."""
    details = [readable_detail(d) for d in status.details]
    name = _GRPC_NAMES.get(status.code, "UNKNOWN")
    return ConnectError(_CONNECT.get(name, Code.UNKNOWN), status.message, details)


def grpc_code_name(error: BaseException | None) -> str:
    """The code a call ended with, as gRPC names it (OK, NOT_FOUND, CANCELLED ...)."""
    if error is None:
        return "OK"
    if isinstance(error, ConnectError):
        return "CANCELLED" if error.code is Code.CANCELED else error.code.name
    return "UNKNOWN"


@dataclass
class _Call:
    method: str
    request_id: str
    started: float


class EdgeInterceptor:
    """Request id, bearer auth, access log and metrics of every HTTP call (before its body is read).

    The token names its caller (tenants/), admitted as on gRPC: a viewer's write
    is 403 PERMISSION_DENIED, a call past its tenant's rate 429 RESOURCE_EXHAUSTED
    with RetryInfo and Retry-After; an admitted call runs with `CALLER` set.
    """

    def __init__(self, telemetry: Telemetry, authority: Authority | None) -> None:
        self._telemetry = telemetry
        self._authority = authority

    async def on_start(self, ctx: RequestContext[Any, Any]) -> _Call:
        method = ctx.method
        call = _Call(
            f"/{method.service_name}/{method.name}",
            request_id_from(ctx.request_headers.items()),
            time.perf_counter(),
        )
        REQUEST_ID.set(call.request_id)
        ctx.response_headers[REQUEST_ID_HEADER] = call.request_id
        if self._authority is not None:
            rejection = self._rejection(self._authority, call.method, ctx)
            if rejection is not None:
                self._end(call, rejection)
                raise rejection
        rejection = _acting(ctx)
        if rejection is not None:
            self._end(call, rejection)
            raise rejection
        return call

    @staticmethod
    def _rejection(authority: Authority, method: str, ctx: RequestContext[Any, Any]) -> ConnectError | None:
        given: Sequence[str] = ctx.request_headers.getall("authorization")
        if not given:
            return ConnectError(
                Code.UNAUTHENTICATED, "missing bearer token: send header 'authorization: Bearer <token>'"
            )
        if len(given) > 1:
            # As on gRPC: no first- or last-wins for a credential.
            return ConnectError(Code.UNAUTHENTICATED, "more than one authorization header: send exactly one")
        caller = authority.caller_of(given[0].encode("utf-8", "surrogateescape"))
        if caller is None:
            return ConnectError(Code.UNAUTHENTICATED, "invalid bearer token")
        CALLER.set(caller)
        try:
            authority.admit(caller, method)
        except errors.RateLimited as exc:
            ctx.response_headers["retry-after"] = str(max(1, math.ceil(exc.retry_delay_seconds)))
            return connect_error(rpc_status_of(exc))
        except errors.PioneerError as exc:
            return connect_error(rpc_status_of(exc))
        return None

    async def on_end(self, call: _Call, ctx: RequestContext[Any, Any], error: Exception | None) -> None:
        if error is not None and not was_served(ctx) and isinstance(error, ConnectError):
            if error.code is Code.INVALID_ARGUMENT and not error.details:
                # The body did not decode: the reason gRPC gives undecodable bytes.
                error = connect_error(
                    rpc_status_of(
                        errors.InvalidArgument(
                            f"request is not a valid request of {call.method}: {error.message}",
                            reason="MALFORMED_REQUEST",
                        )
                    )
                )
        self._end(call, error)
        if error is not None:
            raise error

    def _end(self, call: _Call, error: BaseException | None) -> None:
        code = grpc_code_name(error)
        elapsed = time.perf_counter() - call.started
        service, _, method = call.method.lstrip("/").partition("/")
        caller = CALLER.get()
        tenant = "" if caller is None else caller.of_token
        self._telemetry.metrics.rpc_handled(service, method, code, elapsed, tenant)
        # Here CANCELLED is a client that went away (a closed tab ending its watch, a page navigating
        # off with calls in flight): routine, and nothing an operator can act on. It is still counted.
        access_log.log(
            logging.DEBUG if code == "CANCELLED" else logging.INFO,
            "rpc %s code=%s duration_ms=%.1f protocol=connect",
            call.method,
            code,
            elapsed * 1000,
            extra={
                "method": call.method,
                "code": code,
                "duration_ms": round(elapsed * 1000, 1),
                **(caller.log_fields() if (caller := CALLER.get()) is not None else {}),
            },
        )


class Answering:
    """Wraps servicer methods: the call's span, and domain errors as Connect errors."""

    def __init__(self, telemetry: Telemetry, on_database_failure: Callable[[], None]) -> None:
        self._telemetry = telemetry
        self._on_database_failure = on_database_failure

    def _span(self, name: str, ctx: RequestContext[Any, Any]) -> AbstractContextManager[trace.Span]:
        if not self._telemetry.tracing:
            return nullcontext(trace.INVALID_SPAN)
        service, _, method = name.partition("/")
        headers = ctx.request_headers
        carrier = {k: headers[k] for k in _PROPAGATOR.fields if k in headers}
        attributes: dict[str, Any] = {
            "rpc.system": "connect_rpc",
            "rpc.service": service,
            "rpc.method": method,
        }
        address = ctx.client_address
        if address:
            host, _, port = address.rpartition(":")
            if port.isdigit():
                attributes["network.peer.address"] = host.strip("[]")
                attributes["network.peer.port"] = int(port)
        parent = _PROPAGATOR.extract(carrier) if carrier else _NO_PARENT
        return SpanScope(self._telemetry.tracer, name, attributes, SpanKind.SERVER, parent, errors=False)

    def error_of(self, method: str, exc: Exception) -> ConnectError:
        if isinstance(exc, ConnectError):
            return exc
        if isinstance(exc, NotImplementedError):
            # A generated base servicer's method nobody overrode, as the gRPC edge answers it.
            return ConnectError(Code.UNIMPLEMENTED, f"{method} is not implemented")
        mapped = domain_error_of(exc)
        if mapped is not None and mapped.reason in reasons.INFRASTRUCTURE_REASONS:
            self._on_database_failure()
        if mapped is None:
            return connect_error(internal_rpc_status(method, exc, REQUEST_ID.get()))
        return connect_error(rpc_status_of(mapped))

    @staticmethod
    def _finish(span: trace.Span, error: BaseException | None) -> None:
        if span.is_recording():
            code = grpc_code_name(error)
            if error is not None:
                span.set_attribute("rpc.connect_rpc.error_code", code.lower())
            if code in _SERVER_ERRORS:
                span.set_status(Status(StatusCode.ERROR, code))

    def unary(
        self, name: str, behavior: Callable[[Any, Any], Awaitable[Any]]
    ) -> Callable[[Any, RequestContext[Any, Any]], Awaitable[Any]]:
        method = "/" + name

        async def answer(request: Any, ctx: RequestContext[Any, Any]) -> Any:
            _mark_served(ctx)
            with self._span(name, ctx) as span:
                try:
                    response = await behavior(request, _GrpcContext())
                except Exception as exc:
                    error = self.error_of(method, exc)
                    self._finish(span, error)
                    raise error from None
                self._finish(span, None)
            if isinstance(response, bytes):
                # A servicer that answers encoded bytes (see pioneer_grpc/wire.py).
                return ctx.method.output.FromString(response)
            return response

        return answer

    def stream(
        self, name: str, behavior: Callable[[Any, Any], AsyncIterator[Any]]
    ) -> Callable[[Any, RequestContext[Any, Any]], AsyncIterator[Any]]:
        method = "/" + name

        async def answer(request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
            _mark_served(ctx)
            context = _GrpcContext()
            with self._span(name, ctx) as span:
                error: BaseException | None = None
                try:
                    async for item in behavior(request, context):
                        yield item
                except Exception as exc:
                    error = self.error_of(method, exc)
                    raise error from None
                finally:
                    self._finish(span, error)
                    context.done()

        return answer


# The served flag travels on the context object the interceptor also sees.
_SERVED_ATTRIBUTE = "_pioneer_served"


def _mark_served(ctx: RequestContext[Any, Any]) -> None:
    setattr(ctx, _SERVED_ATTRIBUTE, True)


def was_served(ctx: RequestContext[Any, Any]) -> bool:
    return bool(getattr(ctx, _SERVED_ATTRIBUTE, False))


class _GrpcContext:
    """The part of grpc.aio.ServicerContext the servicers use (a stream's end callbacks)."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[Any], None]] = []

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        self._callbacks.append(callback)

    def set_code(self, _code: Any) -> None:
        """The generated base methods set UNIMPLEMENTED before raising NotImplementedError (mapped above)."""

    def set_details(self, _details: str) -> None:
        """As set_code."""

    def done(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)


def _acting(ctx: RequestContext[Any, Any]) -> ConnectError | None:
    """The tenant the call acts in (TENANT_HEADER), as on gRPC (server/interceptors.py TenantInterceptor)."""
    named: Sequence[str] = ctx.request_headers.getall(TENANT_HEADER)
    if not named:
        return None
    try:
        if len(named) > 1:
            raise errors.InvalidArgument.field(TENANT_HEADER, "must be sent once")
        CALLER.set(acting(current_caller(), named[0]))
    except errors.PioneerError as exc:
        return connect_error(rpc_status_of(exc))
    return None
