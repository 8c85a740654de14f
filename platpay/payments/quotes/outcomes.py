"""How a quote's payout ends: the outcome labels a payout rail or UMA network chooses at quote creation
(payments/providers.py; the sandbox's magic values are in payments/sandbox.py), and what the failing ones
mean at settlement."""

from __future__ import annotations

SUCCESS = "SUCCESS"
EXECUTION_FAILED = "EXECUTION_FAILED"  # 002: fails right after execute
SLOW_SUCCESS = "SLOW_SUCCESS"  # 003: completes after ~6 minutes
DELIVERY_FAILED = "DELIVERY_FAILED"  # 004: the counterparty could not deliver
BANK_RETURN = "BANK_RETURN"  # 005: COMPLETED, then returned (FAILED)
USER_CANCELLED = "USER_CANCELLED"  # 006: cancelled, refunded
PAYOUT_AND_REFUND_FAIL = "PAYOUT_AND_REFUND_FAIL"  # 007: fails and the refund fails too
LONG_PENDING = "LONG_PENDING"  # $pending.long.*
COMPLIANCE_FAILURE = "COMPLIANCE_FAILURE"  # $fail.compliance.*

# outcome -> (transaction failureReason, refund reason) for payouts that fail at settlement
SETTLEMENT_FAILURES = {
    DELIVERY_FAILED: ("COUNTERPARTY_POST_TX_FAILED", "TRANSACTION_FAILED"),
    USER_CANCELLED: ("QUOTE_EXECUTION_FAILED", "USER_CANCELLATION"),
    PAYOUT_AND_REFUND_FAIL: ("QUOTE_EXECUTION_FAILED", "TRANSACTION_FAILED"),
    COMPLIANCE_FAILURE: ("QUOTE_EXECUTION_FAILED", "TRANSACTION_FAILED"),
}
