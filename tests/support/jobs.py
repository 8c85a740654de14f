from __future__ import annotations

import asyncio
from collections.abc import Callable

from platpay.jobs.runner import JobRunner
from platpay.kit import clock


async def run_jobs_until(runner: JobRunner, done: Callable[[], bool], *, timeout: float = 15.0) -> None:
    """Run due jobs (real runner, real claims) until `done()` holds; retries scheduled later are waited for."""
    deadline = clock.monotonic() + timeout
    while not done():
        if clock.monotonic() > deadline:
            raise TimeoutError("condition not reached while running jobs")
        await runner.run_until_idle(timeout=timeout)
        if not done():
            await asyncio.sleep(0.02)
