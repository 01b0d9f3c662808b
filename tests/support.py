"""Helpers shared across the test suite (not fixtures: plain functions any test imports)."""

from __future__ import annotations

import os
import socket

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
