"""How a sandbox payment ends, keyed on the last three characters of the counterparty account's primary
identifier (INTERFACE-FACTS §7). Production tenants always take the normal path."""

from __future__ import annotations

from platpay.accounts import external_service

SUCCESS = "SUCCESS"
# Same-currency transfers (transfer-in / transfer-out)
TRANSFER_OUTCOMES = {
    "002": "INSUFFICIENT_FUNDS",  # fails at once
    "003": "ACCOUNT_CLOSED",  # fails at once
    "004": "BANK_REJECTED",  # fails when the rail answers
    "005": "SLOW_FAILURE",  # pending ~30 s, then fails
}
IMMEDIATE_FAILURES = frozenset({"INSUFFICIENT_FUNDS", "ACCOUNT_CLOSED"})


def transfer_outcome(identifier: str, *, sandbox: bool) -> str:
    if not sandbox:
        return SUCCESS
    return TRANSFER_OUTCOMES.get(external_service.magic_suffix(identifier), SUCCESS)
