"""Jobs owned by the runner itself."""

from __future__ import annotations

from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext


@handler("system.noop")
async def noop(ctx: JobContext) -> None:
    """Does nothing; measures the runner's own overhead (bench/) and checks a worker is alive."""
