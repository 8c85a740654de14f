"""The shared browser fixture: Debian's Chromium (/usr/bin/chromium) driven by Playwright (never
`playwright install`). Without /usr/bin/chromium a browser test skips, naming the Debian package
`chromium`; with PLATPAY_TEST_REQUIRE_BROWSER set (CI) it fails instead."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """A launched Chromium (playwright.async_api.Browser), closed after the test."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: install Debian's package `chromium` (apt-get install chromium)"
        if os.environ.get("PLATPAY_TEST_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            yield launched
        finally:
            await launched.close()
