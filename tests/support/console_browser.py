"""The console in a real browser: the app on a real socket, Chromium (tests/support/browser.py) signed in
through the sign-in form, axe-core (npm, pinned by tests/browser/package-lock.json) run in each page, and a
screenshot of each page kept as a CI artifact (PLATPAY_TEST_ARTIFACTS/console, else the test's tmp dir).

Usage in a test module:

    from tests.support.browser import browser  # noqa: F401
    from tests.support.console_browser import served, ConsoleTab  # noqa: F401

    @pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
    async def test_x(browser, served, auth, tmp_path):
        tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
        await tab.goto("/console/customers")
        await tab.check()            # axe: no serious or critical violation; and a screenshot
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from platpay.app import create_app

BROWSER_DIR = Path(__file__).resolve().parent.parent / "browser"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


def axe_source() -> str:
    """axe.min.js as package-lock.json pins it (`npm ci` once per lock change, under a file lock so parallel
    test workers install it once)."""
    if shutil.which("npm") is None:
        if os.environ.get("PLATPAY_TEST_REQUIRE_NODE"):
            pytest.fail("PLATPAY_TEST_REQUIRE_NODE is set but npm is not installed (Debian package npm)")
        pytest.skip("npm is not installed, so pages are not checked with axe-core (CI has it)")
    stamp = BROWSER_DIR / "node_modules" / ".platpay-lock-sha256"
    digest = hashlib.sha256((BROWSER_DIR / "package-lock.json").read_bytes()).hexdigest()
    with open(BROWSER_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists() or stamp.read_text() != digest:
            subprocess.run(
                ["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"],
                cwd=BROWSER_DIR,
                check=True,
                capture_output=True,
                timeout=300,
            )
            stamp.write_text(digest)
    return (BROWSER_DIR / "node_modules" / "axe-core" / "axe.min.js").read_text()


@pytest.fixture
async def served(settings: Any, db: Any) -> AsyncIterator[str]:
    """The app (console and hosted pages included) on a real socket (127.0.0.1, a free port), served in this
    event loop."""
    app = create_app(settings, database=db, embedded_worker=False)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", log_config=None, lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


def shots_dir(fallback: Path) -> Path:
    root = (
        Path(os.environ["PLATPAY_TEST_ARTIFACTS"]) if os.environ.get("PLATPAY_TEST_ARTIFACTS") else fallback
    )
    path = root / "console"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class ConsoleTab:
    """One signed-in browser tab on the console."""

    context: Any
    page: Any
    base_url: str
    shots: Path

    @classmethod
    async def open(
        cls,
        browser: Any,
        base_url: str,
        credentials: tuple[str, str],
        *,
        shots: Path,
        viewport: dict[str, int] | None = None,
    ) -> ConsoleTab:
        context = await browser.new_context(viewport=viewport or DESKTOP)
        tab = cls(context=context, page=await context.new_page(), base_url=base_url, shots=shots_dir(shots))
        await tab.sign_in(credentials)
        return tab

    async def sign_in(self, credentials: tuple[str, str]) -> None:
        await self.page.goto(f"{self.base_url}/console/sign-in")
        await self.page.get_by_label("Client id").fill(credentials[0])
        await self.page.get_by_label("Client secret").fill(credentials[1])
        await self.page.get_by_role("button", name="Sign in").click()
        await self.page.wait_for_url(f"{self.base_url}/console")

    async def goto(self, path: str) -> Any:
        """Open a console path; returns the response (its status: `.status`)."""
        return await self.page.goto(f"{self.base_url}{path}")

    async def check(self, name: str | None = None) -> None:
        """axe-core over the page (no serious or critical violation, each named in the failure) and, with
        `name`, a full-page screenshot kept as an artifact."""
        await check_accessibility(self.page)
        if name:
            await self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)

    async def close(self) -> None:
        await self.context.close()


async def check_accessibility(page: Any) -> None:
    # Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern: the
    # console's own CSP stays as served.
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        await page.evaluate(axe_source())
    result = await page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' '))}))"
    )
    serious = [v for v in result if v["impact"] in ("serious", "critical")]
    assert not serious, f"axe-core found serious or critical violations on {page.url}: {serious}"
