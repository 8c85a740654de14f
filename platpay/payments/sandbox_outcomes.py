"""How a sandbox payment ends, keyed on the last three characters of the counterparty account's primary
identifier (INTERFACE-FACTS §7), chosen by the sandbox rail (payments/sandbox.py); what each failure means.

A failed transfer's failureReason is a value of the reference enum of its direction; the sandbox label
travels in failureDetails.code, with a message, so the specific cause is not lost:

| suffix | label              | when                    | OUTGOING (transfer-out)       | INCOMING (transfer-in)  |
|--------|--------------------|-------------------------|-------------------------------|-------------------------|
| 002    | INSUFFICIENT_FUNDS | refused at once         | QUOTE_EXECUTION_FAILED        | QUOTE_EXECUTION_FAILED  |
| 003    | ACCOUNT_CLOSED     | refused at once         | QUOTE_EXECUTION_FAILED        | QUOTE_EXECUTION_FAILED  |
| 004    | BANK_REJECTED      | when the rail answers   | COUNTERPARTY_POST_TX_FAILED   | QUOTE_EXECUTION_FAILED  |
| 005    | SLOW_FAILURE       | after ~30 s pending     | COUNTERPARTY_POST_TX_FAILED   | QUOTE_EXECUTION_FAILED  |
| 006    | SLOW_SETTLEMENT    | succeeds after ~10 min  | (settles)                     | (settles)               |

006 keeps a transfer unsettled (PROCESSING, or PENDING for a transfer-in) for
`sandbox_slow_settlement_seconds`, long enough to try POST /transactions/{id}/cancel on it.

Outgoing: a refusal before any money left is the payment not executing (QUOTE_EXECUTION_FAILED: fix the
account or retry); a failure after the rail took the payment is the receiving side failing it
(COUNTERPARTY_POST_TX_FAILED), as for a quote's 004 and bank returns. Incoming: a pull that fails, at once or
when the bank answers, is the pull not executing; the incoming enum has nothing closer (OFFRAMP_FAILED is
paying the receiver out to a bank, PAY_REQUEST_FAILED the UMA pay request), and nothing was credited.
"""

from __future__ import annotations

from typing import TypedDict

from platpay.payments.models import TransactionRow
from platpay.payments.state import TransactionType

SUCCESS = "SUCCESS"
INSUFFICIENT_FUNDS, ACCOUNT_CLOSED = "INSUFFICIENT_FUNDS", "ACCOUNT_CLOSED"  # fail at once
BANK_REJECTED = "BANK_REJECTED"  # fails when the rail answers
SLOW_FAILURE = "SLOW_FAILURE"  # pending ~30 s, then fails
SLOW_SETTLEMENT = "SLOW_SETTLEMENT"  # unsettled ~10 min (cancellable meanwhile), then settles
SETTLES = frozenset({SUCCESS, SLOW_SETTLEMENT})
# Same-currency transfers (transfer-in / transfer-out)
TRANSFER_OUTCOMES = {
    "002": INSUFFICIENT_FUNDS,
    "003": ACCOUNT_CLOSED,
    "004": BANK_REJECTED,
    "005": SLOW_FAILURE,
    "006": SLOW_SETTLEMENT,
}
IMMEDIATE_FAILURES = frozenset({INSUFFICIENT_FUNDS, ACCOUNT_CLOSED})
QUOTE_EXECUTION_FAILED, COUNTERPARTY_POST_TX_FAILED = "QUOTE_EXECUTION_FAILED", "COUNTERPARTY_POST_TX_FAILED"

# label -> (OUTGOING failureReason, failureDetails.message); INCOMING is always QUOTE_EXECUTION_FAILED
_FAILURES = {
    INSUFFICIENT_FUNDS: (QUOTE_EXECUTION_FAILED, "the rail refused the transfer at once: insufficient funds"),
    ACCOUNT_CLOSED: (
        QUOTE_EXECUTION_FAILED,
        "the rail refused the transfer at once: the external account is closed or invalid",
    ),
    BANK_REJECTED: (COUNTERPARTY_POST_TX_FAILED, "the external account's bank rejected the transfer"),
    SLOW_FAILURE: (
        COUNTERPARTY_POST_TX_FAILED,
        "the transfer stayed pending at the rail, then the external account's bank failed it",
    ),
}
TRANSFER_FAILURE_LABELS = frozenset(_FAILURES)


class TransferFailure(TypedDict):
    """payments_service.move's failure arguments."""

    failure_reason: str
    failure_details: dict[str, str]


def transfer_failure(row: TransactionRow) -> TransferFailure:
    """How a transfer whose sandbox outcome is a failure fails (the table above)."""
    outgoing_reason, message = _FAILURES[row.outcome or ""]
    return {
        "failure_reason": outgoing_reason if row.type == TransactionType.OUTGOING else QUOTE_EXECUTION_FAILED,
        "failure_details": {"code": row.outcome or "", "message": message},
    }
