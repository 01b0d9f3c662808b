"""Helpers shared across the test suite (not fixtures: plain functions any test imports)."""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
from collections.abc import Awaitable, Callable
from typing import NoReturn

import pytest


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
