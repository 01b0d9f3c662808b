"""Debian's Chromium driven by Playwright, for the console's tests: each browser a fresh profile.

A "new browser" is what a person gets who is sent a link: another profile, so no sessionStorage,
no cookies, no history. Screenshots go under $PIONEER_CONSOLE_SCREENSHOTS when set.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.support import unavailable_here

CHROMIUM = os.environ.get("PIONEER_CHROMIUM", "/usr/bin/chromium")
# Waits for what the page shows; generous because two cores are shared, never a fixed sleep.
WAIT_MS = 30_000
VIEWPORT = {"width": 1500, "height": 1000}
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

OpenBrowser = Callable[..., Awaitable[Any]]


def chromium() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    unavailable_here(f"{CHROMIUM} is missing: `make test` installs Debian's chromium (scripts/chromium.sh)")


def screenshot_dir(tmp_path: Path) -> Path:
    where = Path(os.environ.get("PIONEER_CONSOLE_SCREENSHOTS") or tmp_path / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    return where


@asynccontextmanager
async def browsers() -> AsyncIterator[OpenBrowser]:
    """Yields `open(**context_options)`: a new browser on a fresh profile each time, all closed at the end."""
    executable = chromium()
    from playwright.async_api import async_playwright

    profiles: list[str] = []
    contexts: list[Any] = []
    try:
        async with async_playwright() as playwright:

            async def open_browser(**options: Any) -> Any:
                profile = tempfile.mkdtemp(prefix="pioneer-chromium-")
                profiles.append(profile)
                context = await playwright.chromium.launch_persistent_context(
                    profile,
                    executable_path=executable,
                    headless=True,
                    viewport=VIEWPORT,
                    locale="en-US",
                    args=ARGS,
                    **options,
                )
                contexts.append(context)
                return context

            try:
                yield open_browser
            finally:
                for context in contexts:
                    await context.close()
    finally:
        for profile in profiles:
            shutil.rmtree(profile, ignore_errors=True)


async def sign_in(page: Any, token: str) -> None:
    from playwright.async_api import expect

    await expect(page.get_by_test_id("token-form")).to_be_visible(timeout=WAIT_MS)
    await page.get_by_test_id("token-input").fill(token)
    await page.get_by_test_id("token-submit").click()
    await expect(page.get_by_test_id("token-form")).to_be_hidden(timeout=WAIT_MS)
