"""Cards' jobs: provisioning by the issuer, the card network's messages on a card transaction (the sandbox's
clearing, return, advice and return reversal simulations), a delayed pull's confirmation."""

from __future__ import annotations

import structlog

from platpay.cards import service, transactions
from platpay.cards.decisioning import MessageKind
from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext

log = structlog.get_logger("platpay.cards")


@handler(service.PROVISION_JOB)
async def provision(ctx: JobContext) -> None:
    """The issuer's answer for a new card: ACTIVE or CLOSED (ISSUER_REJECTED), with card.state_change."""
    async with ctx.transaction() as session:
        await service.provision(
            session,
            tenant_id=ctx.tenant_id or "",
            card_id=ctx.payload["cardId"],
            outcome=ctx.payload["outcome"],
            settings=ctx.settings,
        )


@handler(transactions.NETWORK_JOB)
async def network_message(ctx: JobContext) -> None:
    """A network message a simulation sent on an existing card transaction (clearing, return, advice, return
    reversal). Messages that open one are applied in the simulation's request; such a message queued by an
    earlier version (before an upgrade) is applied here as it was: an AUTHORIZATION on the fast path (a lean
    transaction, the balance moved last)."""
    payload, tenant_id = ctx.payload, ctx.tenant_id or ""
    if payload["message"] not in MessageKind.__members__:
        async with ctx.transaction() as session:
            await transactions.apply_message(session, tenant_id=tenant_id, payload=payload)
        return
    kind = MessageKind(payload["message"])
    opened = await ctx.run(
        transactions.authorization(
            tenant_id=tenant_id,
            card_id=payload["cardId"],
            transaction_id=payload["cardTransactionId"],
            issuer_transaction_token=payload["issuerTransactionToken"],
            kind=kind,
            amount=payload["amount"],
            currency=payload["currency"],
            merchant=payload["merchant"],
            settings=ctx.settings,
        )
    )
    if opened is None:  # (a sandbox reset deleted the card meanwhile)
        log.warning(
            "cards.network_message_not_applied",
            message=kind,
            card_id=payload["cardId"],
            reason="no such card",
        )


@handler(transactions.CONFIRM_PULL_JOB)
async def confirm_pull(ctx: JobContext) -> None:
    async with ctx.transaction() as session:
        await transactions.confirm_pull(
            session, tenant_id=ctx.tenant_id or "", transaction_id=ctx.payload["cardTransactionId"]
        )
