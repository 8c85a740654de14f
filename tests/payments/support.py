"""Helpers for money tests: customers with the information USD needs, accounts, funding, balances."""

from __future__ import annotations

from typing import Any

# The reference's enums (its OpenAPI document: OutgoingTransactionFailureReason,
# IncomingTransactionFailureReason of the 2026-08 document), written out here so a drift in platpay cannot
# move them too. SCA_NOT_COMPLETED belongs to strong customer authentication, outside SPEC's scope.
OUTGOING_FAILURE_REASONS = frozenset({
    "QUOTE_EXPIRED", "QUOTE_RATE_UNAVAILABLE", "QUOTE_EXECUTION_FAILED", "FUNDING_AMOUNT_MISMATCH",
    "PAYOUT_RETURNED", "LIMIT_EXCEEDED", "ACCOUNT_CANNOT_RECEIVE", "ACCOUNT_INVALID", "COMPLIANCE_REJECTED",
    "LIGHTNING_PAYMENT_FAILED", "COUNTERPARTY_POST_TX_FAILED",
})  # fmt: skip
INCOMING_FAILURE_REASONS = frozenset({
    "LNURLP_FAILED", "PAY_REQUEST_FAILED", "PAYMENT_APPROVAL_WEBHOOK_ERROR", "PAYMENT_APPROVAL_TIMED_OUT",
    "OFFRAMP_FAILED", "MISSING_MANDATORY_PAYEE_DATA", "QUOTE_EXPIRED", "QUOTE_EXECUTION_FAILED",
    "COMPLIANCE_REJECTED", "COLLECTION_FAILED",
})  # fmt: skip


def assert_reference_transaction(tx: dict[str, Any]) -> dict[str, Any]:
    """`tx` has the reference's shape where the audit found it wrong: `fees` an int64 of minor units >= 0
    (not a CurrencyAmount) and `failureReason` from the enum of its direction."""
    assert tx["direction"] in ("CREDIT", "DEBIT"), tx  # required on every transaction since 2026-08
    if "fees" in tx:
        assert type(tx["fees"]) is int and 0 <= tx["fees"] < 2**63, tx["fees"]
    if "failureReason" in tx:
        allowed = OUTGOING_FAILURE_REASONS if tx["type"] == "OUTGOING" else INCOMING_FAILURE_REASONS
        assert tx["failureReason"] in allowed, (tx["type"], tx["failureReason"])
    return tx


def transaction_webhooks(receiver, transaction_id: str) -> list[dict[str, Any]]:
    """Every OUTGOING_PAYMENT.* / INCOMING_PAYMENT.* webhook received about one transaction."""
    return [
        r.json
        for r in receiver.received
        if r.json["type"].split(".")[0] in ("OUTGOING_PAYMENT", "INCOMING_PAYMENT")
        and r.json["data"]["id"] == transaction_id
    ]
