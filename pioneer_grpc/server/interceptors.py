"""Server interceptors: bearer-token auth, and domain-error mapping for every RPC.

Servicers raise `pioneer_grpc.errors.PioneerError`; the error interceptor wraps
each handler so that exception becomes a canonical status with details.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from grpc.aio import ServerInterceptor

from pioneer_grpc import errors
from pioneer_grpc.server.errors import internal_status, to_status

HEALTH_PREFIX = "/grpc.health.v1.Health/"


# Already a status (an abort), or grpc's own UNIMPLEMENTED from a base servicer.
PASS_THROUGH = (grpc.aio.AbortError, grpc.aio.UsageError, NotImplementedError)


def _status_of(method: str, exc: Exception) -> grpc.Status:
    if isinstance(exc, errors.PioneerError):
        return to_status(exc)
    return internal_status(method, exc)


def _rejecting_handler(message: str) -> grpc.RpcMethodHandler:
    async def reject(_request: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    return grpc.unary_unary_rpc_method_handler(reject)


class AuthInterceptor(ServerInterceptor):
    """Requires `authorization: Bearer <token>` on every RPC but health checks."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        if details.method.startswith(HEALTH_PREFIX):
            return await continuation(details)
        given = dict(details.invocation_metadata or ()).get("authorization")
        if given is None:
            return _rejecting_handler("missing bearer token: send metadata 'authorization: Bearer <token>'")
        given_bytes = given.encode() if isinstance(given, str) else given
        if not hmac.compare_digest(given_bytes, self._expected):
            return _rejecting_handler("invalid bearer token")
        return await continuation(details)


def _wrap_unary(method: str, behavior: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await behavior(request, context)
        except PASS_THROUGH:
            raise
        except Exception as exc:
            await context.abort_with_status(_status_of(method, exc))

    return wrapped


def _wrap_stream(
    method: str, behavior: Callable[..., AsyncIterator[Any]]
) -> Callable[..., AsyncIterator[Any]]:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        try:
            async for item in behavior(request, context):
                yield item
        except PASS_THROUGH:
            raise
        except Exception as exc:
            await context.abort_with_status(_status_of(method, exc))

    return wrapped


class ErrorInterceptor(ServerInterceptor):
    """Maps PioneerError (and unexpected exceptions) raised by pioneer.v1 servicers."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None or not details.method.startswith("/pioneer.v1."):
            return handler
        method = details.method
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                _wrap_unary(method, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                _wrap_stream(method, handler.unary_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler
