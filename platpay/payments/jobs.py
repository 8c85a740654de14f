"""Payment lifecycle jobs."""

from __future__ import annotations

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


def _batched(payload: dict[str, Any]) -> bool:
    """Which steps run in batches: those that move no balance (a transfer's `process`). A settle step posts to
    its account and to the tenant's clearing account: several in one transaction would lock several accounts
    across round trips, in no order two such transactions share (PostgreSQL found deadlocks between them and
    the API's opposing entries), and hold the clearing row for the whole batch. Those run one per transaction,
    their balance changes sent in one statement in account-id order (`ledger.post`)."""
    return payload.get("step") == "process"


@batch_handler(transfers.STEP_JOB, takes=_batched)
async def transfer_steps(contexts: list[JobContext]) -> None:
    """A tenant's `process` steps claimed together (the runner's batch of the default lane) in one
    transaction (`transfers.steps`: leanly, one read of every transfer and one statement of every write):
    each transfer's status change and webhooks, its settle step queued, and every job finished, commit
    together or not at all (`run_together`: lean first, raced in one ORM transaction; a lease lost meanwhile
    leaves them to the runner, one by one)."""
    first = contexts[0]
    batch = [(ctx.payload["transactionId"], ctx.payload["step"]) for ctx in contexts]

    async def steps(session: LeanSession) -> None:
        await transfers.steps(
            session, tenant_id=first.tenant_id or "", transfers=batch, settings=first.settings
        )

    await run_together(contexts, LeanFirst.same(steps))
