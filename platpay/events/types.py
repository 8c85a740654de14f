"""Webhook event types (INTERFACE-FACTS §5.2, with SPEC's names where they differ) and their retry rules."""

from __future__ import annotations

TEST = "TEST"
INCOMING_PAYMENT_PENDING = "INCOMING_PAYMENT.PENDING"

# No retry for these: the test ping, and the incoming-payment approval request (its reply *is* the answer).
NOT_RETRIED = frozenset({TEST, INCOMING_PAYMENT_PENDING})

ALL = frozenset(
    {
        TEST,
        "OUTGOING_PAYMENT.PENDING",
        "OUTGOING_PAYMENT.PROCESSING",
        "OUTGOING_PAYMENT.COMPLETED",
        "OUTGOING_PAYMENT.FAILED",
        "OUTGOING_PAYMENT.EXPIRED",
        "OUTGOING_PAYMENT.REFUND_PENDING",
        "OUTGOING_PAYMENT.REFUND_COMPLETED",
        "OUTGOING_PAYMENT.REFUND_FAILED",
        INCOMING_PAYMENT_PENDING,
        "INCOMING_PAYMENT.COMPLETED",
        "INCOMING_PAYMENT.FAILED",
        "CUSTOMER.KYC_APPROVED",
        "CUSTOMER.KYC_REJECTED",
        "CUSTOMER.KYC_PENDING",
        "CUSTOMER.KYB_APPROVED",
        "CUSTOMER.KYB_REJECTED",
        "CUSTOMER.KYB_PENDING",
        "VERIFICATION.APPROVED",
        "VERIFICATION.REJECTED",
        "VERIFICATION.RESOLVE_ERRORS",
        "VERIFICATION.IN_PROGRESS",
        "VERIFICATION.PENDING_MANUAL_REVIEW",
        "VERIFICATION.READY_FOR_VERIFICATION",
        "INTERNAL_ACCOUNT.BALANCE_UPDATED",
        "INTERNAL_ACCOUNT.STATUS_UPDATED",
        "INVITATION_CLAIMED",
        "BULK_UPLOAD.COMPLETED",
        "BULK_UPLOAD.FAILED",
        "AGENT_ACTION.PENDING_APPROVAL",
        "card.state_change",
        "card.funding_source_change",
    }
)
