"""Helpers shared across the test suite (not fixtures: plain functions any test imports)."""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
from collections.abc import Callable

import pytest


def unavailable_here(reason: str) -> None:
    """Skips a test this machine cannot run; under CI=true, where everything must run, fails it."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"under CI this test must run: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def eventually(condition: Callable[[], bool], within: float = 10, step: float = 0.02) -> None:
    """Polls server-side state that has no event to wait on."""
    deadline = asyncio.get_running_loop().time() + within
    for _ in itertools.count():
        if condition():
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {within}s")
        await asyncio.sleep(step)
