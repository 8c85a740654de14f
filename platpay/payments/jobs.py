"""Payment lifecycle jobs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from platpay.db.unit_of_work import LeanFirst, LeanSession
from platpay.jobs.registry import batch_handler, handler
from platpay.jobs.runner import JobContext, run_together
from platpay.payments import transfers


@handler(transfers.STEP_JOB)
async def transfer_step(ctx: JobContext) -> None:
    """One step of a transfer; its state change, ledger entry and webhooks commit with the job: first in a
    lean transaction, raced or on a rarer path once more in an ORM session (`transfers.step`)."""
    await ctx.run(LeanFirst.same(transfers.step, **_step_of(ctx)))


def _step_of(ctx: JobContext) -> dict[str, Any]:
    """The step job's arguments to `transfers.step`."""
    return {
        "tenant_id": ctx.tenant_id or "",
        "transaction_id": ctx.payload["transactionId"],
        "step_name": ctx.payload["step"],
        "settings": ctx.settings,
    }


# How many settle steps commit together. Their writes must fit the one statement a lean transaction sends
# them in (db/lean.py `_MAX_DEFERRED`: 32; more are sent early, and an event reading a balance change sent
# before it races, sending the batch one by one): each settlement defers 10 with a webhook endpoint (its
# entry and 2 postings, its status change, 2 events and each event's delivery and delivery job), 6 without;
# the batch adds its balance changes (one per account, the clearing account's once), one balance-after per
# entry but the account's last, the jobs' finish and the endpoint's check. Two settlements with an endpoint
# take 25-26; three would take 36.
SETTLES_TOGETHER = 2


def _batched(payload: dict[str, Any]) -> bool:
    """Which steps run in batches: a transfer's `process` (it moves no balance) and `settle` steps."""
    return payload.get("step") in ("process", "settle")


@batch_handler(transfers.STEP_JOB, takes=_batched)
async def transfer_steps(contexts: list[JobContext]) -> None:
    """A tenant's steps claimed together (the runner's batch of the default lane): its `process` steps in
    one transaction, its `settle` steps a few at a time (`SETTLES_TOGETHER`), each such transaction leanly one
    read of every transfer and one statement of every write (`transfers.steps`), every job finished in it
    (`run_together`). Process steps that race run in one ORM transaction; settle steps that race (a transfer
    that fails, a balance refused, a lease lost) are left to the runner one by one: several settlements in
    one ORM transaction would lock accounts and the clearing row across round trips, in no order the API
    shares (PostgreSQL found deadlocks so with the API's opposing entries)."""
    processes = [ctx for ctx in contexts if ctx.payload["step"] == "process"]
    settles = [ctx for ctx in contexts if ctx.payload["step"] == "settle"]
    if processes:
        await run_together(processes, LeanFirst.same(_steps_of(processes)))
    for start in range(0, len(settles), SETTLES_TOGETHER):
        group = settles[start : start + SETTLES_TOGETHER]
        if len(group) == 1:
            continue  # left to the runner: one step on its own (transfer_step)
        await run_together(group, LeanFirst.same(_steps_of(group)), careful=False)


def _steps_of(contexts: list[JobContext]) -> Callable[[LeanSession], Awaitable[None]]:
    """`transfers.steps` of the contexts' steps, as one unit of work."""
    first = contexts[0]
    batch = [(ctx.payload["transactionId"], ctx.payload["step"]) for ctx in contexts]

    async def steps(session: LeanSession) -> None:
        await transfers.steps(
            session, tenant_id=first.tenant_id or "", transfers=batch, settings=first.settings
        )

    return steps
