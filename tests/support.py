"""Helpers shared across the test suite (not fixtures: plain functions any test imports)."""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

import grpc
import pytest

from pioneer_grpc.client import RpcFailure
from pioneer_grpc.client.errors import failure_from
from pioneer_grpc.store.engine import PoolState, pool_state


def unavailable_here(reason: str) -> NoReturn:
    """Skips a test this machine cannot run; under CI=true, where everything must run, fails it."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"under CI this test must run: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def eventually(
    condition: Callable[[], bool | Awaitable[bool]], within: float = 10, step: float = 0.02, what: str = ""
) -> None:
    """Polls state that has no event to wait on (server-side state, another process, a log) until
    `condition()` (a function or a coroutine function) holds; fails naming `what` after `within` s."""
    try:
        async with asyncio.timeout(within):
            while True:
                held = condition()
                if inspect.isawaitable(held):
                    held = await held
                if held:
                    return
                await asyncio.sleep(step)
    except TimeoutError:
        raise AssertionError(f"not within {within}s: {what or 'condition not met'}") from None


@dataclass
class Failure:
    """A failed call as the tests compare it: violations as (field, description) pairs."""

    code: grpc.StatusCode
    message: str
    violations: list[tuple[str, str]]
    reason: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    domain: str = ""


def decoded(error: grpc.RpcError | RpcFailure) -> Failure:
    """The code, ErrorInfo and BadRequest of a failed call, decoded by the Python client's own decoder."""
    failed = error if isinstance(error, RpcFailure) else failure_from(error)
    return Failure(
        failed.code,
        failed.message,
        [(v.field, v.description) for v in failed.violations],
        failed.reason,
        failed.metadata,
        failed.domain,
    )


async def failure(call: Awaitable[object]) -> Failure:
    """Awaits a call that must fail (a raw stub's or the client's); returns what it failed with."""
    try:
        await call
    except (grpc.RpcError, RpcFailure) as error:
        return decoded(error)
    raise AssertionError("the call succeeded")


async def pool_at_rest(server: Any) -> PoolState:
    """The pool of a test server (tests/conftest.py ServerHandle) once no health probe is under way.

    The probe draws a connection from the same pool every health_probe_seconds; whenever it ran
    at the moment a test looked, the pool showed one connection checked out that no RPC left.
    Nothing runs between the probe's end and the read (no await), so the read is exact.
    """
    await server.running.database_health.idle()
    return pool_state(server.ctx.store.engine)
