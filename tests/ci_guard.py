"""Under CI=true every test must run: a skip there is a failure (tests/conftest.py installs this hook).

A test may skip on a machine that lacks what it needs (PostgreSQL, root, a kernel
feature); CI is where that must never hide a test, so the skip is reported as a
failure naming its reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome: Any = yield
    report = outcome.get_result()
    if os.environ.get("CI") != "true" or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=true, where every test must run: {reason}"
