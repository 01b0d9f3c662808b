"""Fixtures of the console's browser tests (tests/web/browser.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.web.browser import OpenBrowser, browsers, screenshot_dir


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    return screenshot_dir(tmp_path)


@pytest.fixture
async def open_browser() -> AsyncIterator[OpenBrowser]:
    """`await open_browser(**options)`: a new browser (a fresh profile) each call."""
    async with browsers() as opening:
        yield opening


@pytest.fixture
async def browser(open_browser: OpenBrowser):
    """One browser on a fresh profile."""
    return await open_browser()
