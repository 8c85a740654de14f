"""The receiving side of a payment between two parties of the same platform (INTERFACE-FACTS §3.8, §8).

A quote paying one of the platform's own (a customer's UMA address, or an internal account) is credited
locally when it settles (payments/quotes/settlement.py). Its OUTGOING transaction is the sender's record; the recipient
gets an INCOMING transaction of its own, inserted with the credit, in the same database transaction:

- Already COMPLETED, and only INCOMING_PAYMENT.COMPLETED is sent. INCOMING_PAYMENT.PENDING asks the
  platform to approve a payment (§5.6); a platform paying itself already accepted it when its quote was
  executed, so there is nothing to ask (as a sender failing compliance sends only INCOMING_PAYMENT.FAILED).
- Recorded only when the credit posts. Every failure of such a payment (the pull failing, a funding
  mismatch, expiry) comes before the credit and refunds the sender, so a recipient never sees a payment
  that never reached it; an internal credit is final (no bank return), so none is ever failed or reversed.
- None when the sender owns the credited account (a conversion between its own accounts): the OUTGOING
  transaction already shows that owner both sides.

It is linked to the OUTGOING transaction by `quoteId` (the quote names its `transactionId`) and carries:
`source` the sender's UMA address when the quote paid a UMA address (else the OUTGOING transaction's
source), `receivedAmount` the quote's totalReceivingAmount, `fees` 0 (the sender paid them, in the
sending currency), `counterpartyInformation` the senderCustomerInfo the sender gave on the quote, and the
quote's description.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.customers import service as customers_service
from platpay.kit import clock
from platpay.payments import service as payments_service
from platpay.payments.models import TransactionRow
from platpay.payments.state import TransactionKind, TransactionStatus, TransactionType
from platpay.payments.types import TransactionSource

INTERNAL_INCOMING = TransactionKind.INTERNAL_INCOMING


async def _source(session: AsyncSession, outgoing: TransactionRow) -> TransactionSource:
    """Who paid, as the recipient sees it: the sender's UMA address if it paid to one, else its source."""
    if outgoing.destination.get("destinationType") == "UMA_ADDRESS" and outgoing.customer_id is not None:
        sender = await customers_service.load(
            session, tenant_id=outgoing.tenant_id, customer_id=outgoing.customer_id
        )
        if sender.uma_address:
            return {
                "sourceType": "UMA_ADDRESS",
                "umaAddress": sender.uma_address,
                "currency": outgoing.sent_currency,
            }
    return outgoing.source.copy()


async def record_receipt(
    session: AsyncSession, *, outgoing: TransactionRow, account_id: str, platform_id: str
) -> TransactionRow | None:
    """The recipient's COMPLETED INCOMING transaction for `outgoing`, whose receivedAmount was just
    credited to internal account `account_id` (INCOMING_PAYMENT.COMPLETED); None for a self-conversion."""
    account = await accounts_service.get_internal(
        session, tenant_id=outgoing.tenant_id, account_id=account_id
    )
    if account.customer_id == outgoing.customer_id:
        return None
    platform_customer_id = None
    if account.customer_id is not None:
        recipient = await customers_service.load(
            session, tenant_id=outgoing.tenant_id, customer_id=account.customer_id
        )
        platform_customer_id = recipient.platform_customer_id
    source = await _source(session, outgoing)
    sender_info = (outgoing.extra or {}).get("senderCustomerInfo")
    now = clock.now()
    row = await payments_service.create_transaction(
        session,
        tenant_id=outgoing.tenant_id,
        type=TransactionType.INCOMING,
        kind=INTERNAL_INCOMING,
        status=TransactionStatus.COMPLETED,
        customer_id=account.customer_id,
        platform_customer_id=platform_customer_id,
        source=source,
        destination={"destinationType": "ACCOUNT", "accountId": account.id, "currency": account.currency},
        sender_account_id=source.get("umaAddress") or source.get("accountId") or outgoing.sender_account_id,
        receiver_account_id=account.id,
        sent_amount=outgoing.sent_amount,
        sent_currency=outgoing.sent_currency,
        exchange_rate=outgoing.exchange_rate,
        received_amount=outgoing.received_amount,
        received_currency=outgoing.received_currency,
        fee_amount=0,
        rail=outgoing.rail,
        quote_id=outgoing.quote_id,
        description=outgoing.description,
        extra={
            "outgoingTransactionId": outgoing.id,
            **({"counterpartyInformation": sender_info} if sender_info else {}),
        },
        settled_at=now,
        at=now,
    )
    await payments_service.emit_status(session, row, platform_id=platform_id)
    return row
