"""Server interceptors: bearer-token auth, and the one interceptor every RPC passes through.

`RequestInterceptor` wraps each handler so that, per RPC:
- it has a request id (the client's `x-request-id` or a new one), echoed in the
  response's initial metadata and set for every log line of the RPC;
- request bytes that do not decode are INVALID_ARGUMENT, not a traceback; large
  requests are decoded in a worker thread, a piece at a time;
- a `pioneer_grpc.errors.PioneerError` (the store names its failures as these at
  its own boundary) becomes its canonical status with details; anything else is
  INTERNAL carrying the request id;
- one access line is logged: method, code, duration, id.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message
from grpc.aio import ServerInterceptor

from pioneer_grpc import errors, reasons, wire
from pioneer_grpc.server.errors import domain_error_of, internal_status, to_status
from pioneer_grpc.server.logs import (
    LOGGED_ID_CHARS,
    REQUEST_ID,
    REQUEST_ID_HEADER,
    THREAD_ID,
    TURN_ID,
    request_id_from,
)
from pioneer_grpc.server.methods import logged_name
from pioneer_grpc.tenants import CALLER, TENANT_HEADER, Authority, acting, current_caller

HEALTH_PREFIX = "/grpc.health.v1.Health/"
# Request fields named on the RPC's log lines (as thread_id and turn_id).
THREAD_FIELD, TURN_FIELD = "thread_id", "turn_id"
access_log = logging.getLogger("pioneer_grpc.access")

# Already a status (an abort).
PASS_THROUGH = (grpc.aio.AbortError, grpc.aio.UsageError)
_CODE_NAMES = {int(code.value[0]): code.name for code in grpc.StatusCode}


def _rejecting_handler(message: str) -> grpc.RpcMethodHandler:
    async def reject(_request: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    return grpc.unary_unary_rpc_method_handler(reject)


_MISSING = _rejecting_handler("missing bearer token: send metadata 'authorization: Bearer <token>'")
_INVALID = _rejecting_handler("invalid bearer token")
_TWICE = _rejecting_handler("more than one authorization header: send exactly one")


def _refusing(exc: errors.PioneerError) -> grpc.RpcMethodHandler:
    """Answers the domain error (RequestInterceptor maps it: its status, details and access line)."""

    async def refuse(_request: Any, _context: grpc.aio.ServicerContext) -> None:
        raise exc

    return grpc.unary_unary_rpc_method_handler(refuse)


class AuthInterceptor(ServerInterceptor):
    """Requires exactly one `authorization: Bearer <token>` on every RPC but health checks.

    The token names its caller (tenants/): a viewer's write is PERMISSION_DENIED,
    a call past its tenant's rate RESOURCE_EXHAUSTED with RetryInfo; an admitted
    call runs with `CALLER` set. The header's value is hashed and never decoded,
    logged or kept; a call carrying it twice is refused whatever the values (no
    first- or last-wins for a credential). Nothing is looked up by method name
    before the token matched.
    """

    def __init__(self, authority: Authority) -> None:
        self._authority = authority

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        if details.method.startswith(HEALTH_PREFIX):
            return await continuation(details)
        given = [value for key, value in details.invocation_metadata or () if key == "authorization"]
        if not given:
            return _MISSING
        if len(given) > 1:
            return _TWICE
        value = given[0]
        given_bytes = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
        caller = self._authority.caller_of(given_bytes)
        if caller is None:
            return _INVALID
        # grpc.aio runs the method's handler in the task that looked it up: the handler sees this.
        CALLER.set(caller)
        try:
            self._authority.admit(caller, details.method)
        except errors.PioneerError as exc:
            return _refusing(exc)
        return await continuation(details)


class TenantInterceptor(ServerInterceptor):
    """The tenant a call acts in (tenants/ TENANT_HEADER), after the token named its caller: an
    admin's names any tenant, anyone else's its own only (PERMISSION_DENIED otherwise); two
    values are refused, as two tokens are. Without the header, the token's tenant."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        named = [value for key, value in details.invocation_metadata or () if key == TENANT_HEADER]
        if not named or details.method.startswith(HEALTH_PREFIX):
            return await continuation(details)
        try:
            if len(named) > 1:
                raise errors.InvalidArgument.field(TENANT_HEADER, "must be sent once")
            value = named[0] if isinstance(named[0], str) else bytes(named[0]).decode("utf-8", "replace")
            CALLER.set(acting(current_caller(), value))
        except errors.PioneerError as exc:
            return _refusing(exc)
        return await continuation(details)


class _Undecodable:
    """Stands in for a request whose bytes did not decode; the handler answers INVALID_ARGUMENT."""


UNDECODABLE = _Undecodable()


@dataclass(frozen=True)
class _Undecoded:
    """A large request's bytes, parsed by the handler in a worker thread a piece at a time.

    gRPC calls the deserializer on the event loop, where parsing megabytes in
    one C call would hold up every other RPC (health checks included).
    """

    data: bytes
    message_class: type[Message]

    def decoded(self) -> Any:
        message = self.message_class()
        try:
            for piece in wire.message_pieces(self.data):
                message.MergeFromString(piece)
        except Exception:
            return UNDECODABLE
        return message


def _guarded(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None
    message_class = getattr(deserializer, "__self__", None)  # the generated handlers pass Class.FromString
    if not (isinstance(message_class, type) and issubclass(message_class, Message)):
        message_class = None

    def decode(data: bytes) -> Any:
        if message_class is not None and len(data) > wire.PIECE_BYTES:
            return _Undecoded(data, message_class)
        try:
            return deserializer(data)
        except Exception:
            return UNDECODABLE

    return decode


async def _request_of(request: Any) -> Any:
    if isinstance(request, _Undecoded):
        return await asyncio.to_thread(request.decoded)
    return request


async def _requests_of(method: str, requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """A client stream's messages, decoded; a message that does not decode ends the call INVALID_ARGUMENT."""
    async for request in requests:
        request = await _request_of(request)
        if request is UNDECODABLE:
            raise errors.InvalidArgument(
                f"request bytes are not a valid request of {method}", reason="MALFORMED_REQUEST"
            )
        yield request


@dataclass
class _Rpc:
    """One RPC as the access log sees it."""

    method: str
    request_id: str
    started: float
    on_database_failure: Callable[[], None]
    admit: Callable[[str], bool]
    code: str = "OK"
    reason: str = ""

    def status_for(self, exc: Exception) -> grpc.Status:
        mapped = domain_error_of(exc)
        if mapped is not None and mapped.reason in reasons.INFRASTRUCTURE_REASONS:
            self.on_database_failure()
        self.reason = "INTERNAL" if mapped is None else mapped.reason
        status = internal_status(self.method, exc, self.request_id) if mapped is None else to_status(mapped)
        self.code = _CODE_NAMES.get(int(status.code.value[0]), "UNKNOWN")
        return status

    async def unimplemented(self, context: grpc.aio.ServicerContext) -> None:
        """A base servicer's method nobody overrode (e.g. Health/List): UNIMPLEMENTED, no traceback."""
        self.code = "UNIMPLEMENTED"
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{self.method} is not implemented")

    def undecodable(self) -> grpc.Status:
        return self.status_for(
            errors.InvalidArgument(
                f"request bytes are not a valid request of {self.method}", reason="MALFORMED_REQUEST"
            )
        )

    async def begin(self, context: grpc.aio.ServicerContext) -> None:
        REQUEST_ID.set(self.request_id)
        if not self.method.startswith(HEALTH_PREFIX) and not self.admit(context.peer() or ""):
            self.code, self.reason = "RESOURCE_EXHAUSTED", reasons.TOO_MANY_CONNECTIONS
            await context.abort_with_status(
                to_status(
                    errors.ResourceExhausted(
                        "the server has as many connections open as it accepts (max_connections); "
                        "retry later or reuse a connection",
                        reason=reasons.TOO_MANY_CONNECTIONS,
                    )
                )
            )
        await context.send_initial_metadata(((REQUEST_ID_HEADER, self.request_id),))

    def request_ids(self, request: Any) -> None:
        """The thread and turn the request names, for the RPC's log lines."""
        for field, variable in ((THREAD_FIELD, THREAD_ID), (TURN_FIELD, TURN_ID)):
            value = getattr(request, field, None)
            if isinstance(value, str) and value:
                variable.set(value[:LOGGED_ID_CHARS])

    def aborted(self, context: grpc.aio.ServicerContext) -> None:
        code = context.code()
        self.code = code.name if isinstance(code, grpc.StatusCode) else _CODE_NAMES.get(code or 2, "UNKNOWN")

    def end(self, context: grpc.aio.ServicerContext) -> None:
        if self.code == "CANCELLED" and (context.time_remaining() or 1.0) <= 0:
            self.code = "DEADLINE_EXCEEDED"
        level = logging.DEBUG if self.method.startswith(HEALTH_PREFIX) else logging.INFO
        elapsed_ms = (time.perf_counter() - self.started) * 1000
        caller = CALLER.get()
        access_log.log(
            level,
            "rpc %s code=%s duration_ms=%.1f",
            self.method,
            self.code,
            elapsed_ms,
            # Keys of their own in JSON lines (telemetry/logs.py).
            extra={
                "method": self.method,
                "code": self.code,
                "duration_ms": round(elapsed_ms, 1),
                **({"reason": self.reason} if self.reason else {}),
                **(caller.log_fields() if caller is not None else {}),
            },
        )


async def _decoded(rpc: _Rpc, request: Any, streamed: bool) -> Any:
    return _requests_of(rpc.method, request) if streamed else await _request_of(request)


def _wrap_unary(
    rpc: _Rpc, behavior: Callable[..., Awaitable[Any]], streamed: bool = False
) -> Callable[..., Awaitable[Any]]:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext) -> Any:
        rpc.started = time.perf_counter()
        try:
            await rpc.begin(context)
            request = await _decoded(rpc, request, streamed)
            if request is UNDECODABLE:
                await context.abort_with_status(rpc.undecodable())
            rpc.request_ids(request)
            return await behavior(request, context)
        except PASS_THROUGH:
            if rpc.code == "OK":
                rpc.aborted(context)
            raise
        except asyncio.CancelledError:
            rpc.code = "CANCELLED"
            raise
        except NotImplementedError:
            await rpc.unimplemented(context)
        except Exception as exc:
            await context.abort_with_status(rpc.status_for(exc))
        finally:
            rpc.end(context)

    return wrapped


def _wrap_stream(
    rpc: _Rpc, behavior: Callable[..., AsyncIterator[Any]], streamed: bool = False
) -> Callable[..., AsyncIterator[Any]]:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        rpc.started = time.perf_counter()
        try:
            await rpc.begin(context)
            request = await _decoded(rpc, request, streamed)
            if request is UNDECODABLE:
                await context.abort_with_status(rpc.undecodable())
            rpc.request_ids(request)
            async for item in behavior(request, context):
                yield item
        except PASS_THROUGH:
            if rpc.code == "OK":
                rpc.aborted(context)
            raise
        except (asyncio.CancelledError, GeneratorExit):
            rpc.code = "CANCELLED"
            raise
        except NotImplementedError:
            await rpc.unimplemented(context)
        except Exception as exc:
            await context.abort_with_status(rpc.status_for(exc))
        finally:
            rpc.end(context)

    return wrapped


class RequestInterceptor(ServerInterceptor):
    """Request id, decode guard, error mapping and access log for every RPC, of all four kinds.

    `on_database_failure` is called when an RPC failed because of the database (e.g. to probe health).
    `known_methods` are named in access lines as they are; other names are cut short (methods.py).
    `admit(peer)` says whether an RPC on that connection is served (connections.py).
    """

    def __init__(
        self,
        on_database_failure: Callable[[], None] = lambda: None,
        known_methods: frozenset[str] = frozenset(),
        admit: Callable[[str], bool] = lambda peer: True,
    ) -> None:
        self._on_database_failure = on_database_failure
        self._known = known_methods
        self._admit = admit

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return handler
        rpc = _Rpc(
            logged_name(details.method, self._known),
            request_id_from(details.invocation_metadata),
            time.perf_counter(),
            self._on_database_failure,
            self._admit,
        )
        deserializer = _guarded(handler.request_deserializer)
        serializer = handler.response_serializer
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                _wrap_unary(rpc, handler.unary_unary), deserializer, serializer
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                _wrap_unary(rpc, handler.stream_unary, streamed=True), deserializer, serializer
            )
        # A streaming handler is an async generator, or a coroutine calling context.write().
        if handler.unary_stream is not None:
            stream = handler.unary_stream
            wrap = _wrap_stream if inspect.isasyncgenfunction(stream) else _wrap_unary
            return grpc.unary_stream_rpc_method_handler(wrap(rpc, stream), deserializer, serializer)
        if handler.stream_stream is not None:
            stream = handler.stream_stream
            wrap = _wrap_stream if inspect.isasyncgenfunction(stream) else _wrap_unary
            return grpc.stream_stream_rpc_method_handler(
                wrap(rpc, stream, streamed=True), deserializer, serializer
            )
        return handler


__all__ = ["PASS_THROUGH", "AuthInterceptor", "RequestInterceptor"]
