"""How a sandbox quote payout ends (INTERFACE-FACTS §7), chosen at quote creation.

External destinations key on the last three characters of the account's primary identifier; UMA
destinations on the sandbox counterparty's behaviour. Production tenants always take the normal path.
"""

from __future__ import annotations

from datetime import timedelta

from platpay.accounts import external_service
from platpay.config import Settings
from platpay.payments import uma

SUCCESS = "SUCCESS"
EXECUTION_FAILED = "EXECUTION_FAILED"  # 002: fails right after execute
SLOW_SUCCESS = "SLOW_SUCCESS"  # 003: completes after ~6 minutes
DELIVERY_FAILED = "DELIVERY_FAILED"  # 004: the counterparty could not deliver
BANK_RETURN = "BANK_RETURN"  # 005: COMPLETED, then returned (FAILED)
USER_CANCELLED = "USER_CANCELLED"  # 006: cancelled, refunded
PAYOUT_AND_REFUND_FAIL = "PAYOUT_AND_REFUND_FAIL"  # 007: fails and the refund fails too
LONG_PENDING = "LONG_PENDING"  # $pending.long.*
COMPLIANCE_FAILURE = "COMPLIANCE_FAILURE"  # $fail.compliance.*

_BY_SUFFIX = {
    "002": EXECUTION_FAILED,
    "003": SLOW_SUCCESS,
    "004": DELIVERY_FAILED,
    "005": BANK_RETURN,
    "006": USER_CANCELLED,
    "007": PAYOUT_AND_REFUND_FAIL,
}
_BY_UMA_BEHAVIOUR = {
    uma.SUCCESS: SUCCESS,
    uma.LONG_PENDING: LONG_PENDING,
    uma.COMPLIANCE_FAILURE: COMPLIANCE_FAILURE,
}
# outcome -> (transaction failureReason, refund reason) for payouts that fail at settlement
SETTLEMENT_FAILURES = {
    DELIVERY_FAILED: ("COUNTERPARTY_POST_TX_FAILED", "TRANSACTION_FAILED"),
    USER_CANCELLED: ("QUOTE_EXECUTION_FAILED", "USER_CANCELLATION"),
    PAYOUT_AND_REFUND_FAIL: ("QUOTE_EXECUTION_FAILED", "TRANSACTION_FAILED"),
    COMPLIANCE_FAILURE: ("QUOTE_EXECUTION_FAILED", "TRANSACTION_FAILED"),
}


def for_external_account(identifier: str, *, sandbox: bool) -> str:
    if not sandbox:
        return SUCCESS
    return _BY_SUFFIX.get(external_service.magic_suffix(identifier), SUCCESS)


def for_uma(behaviour: str, *, sandbox: bool) -> str:
    return _BY_UMA_BEHAVIOUR.get(behaviour, SUCCESS) if sandbox else SUCCESS


def payout_delay(outcome: str, settings: Settings) -> timedelta:
    """How long the payout stays PROCESSING before it settles (or fails)."""
    if outcome == SLOW_SUCCESS:
        return timedelta(seconds=settings.sandbox_quote_slow_seconds)
    if outcome == LONG_PENDING:
        return timedelta(seconds=settings.sandbox_uma_long_pending_seconds)
    return timedelta(seconds=settings.sandbox_settlement_seconds)
