"""The sandbox's payout rail and UMA network (payments/providers.py): the magic values of INTERFACE-FACTS §7.

Same-currency transfers and a quote's pull key on the last three characters of the external account's
primary identifier (payments/sandbox_outcomes.py has the table); a quote's payout to an external account
on the same suffix (quotes/outcomes.py labels); UMA payouts on the sandbox counterparty's behaviour. The
domain `sandbox.uma.money` (also written `sandbox.grid.uma.money`) hosts the scripted counterparties:
`$success.<ccy>@…` succeed in that currency, `$pending.long.<ccy>@…` stay pending, `$fail.compliance.<ccy>@…`
fail compliance; any other sandbox address is unknown.
"""

from __future__ import annotations

import re
from datetime import timedelta

from platpay.accounts.external import service as external_service
from platpay.config import Settings
from platpay.kit import currencies
from platpay.payments import sandbox_outcomes, uma
from platpay.payments.providers import (
    COMPLIANCE_FAILURE,
    LONG_PENDING,
    SANDBOX_RAIL,
    SANDBOX_UMA_NETWORK,
    SUCCESS,
    Counterparty,
    PayoutRail,
    UmaNetwork,
)
from platpay.payments.quotes import outcomes

SANDBOX_DOMAINS = ("sandbox.uma.money", "sandbox.grid.uma.money")
_SANDBOX_USER_RE = re.compile(r"^(success|pending\.long|fail\.compliance)\.([a-z]{3,4})$")
_BEHAVIOURS = {"success": SUCCESS, "pending.long": LONG_PENDING, "fail.compliance": COMPLIANCE_FAILURE}

# A quote's payout to an external account, by the identifier's last three characters.
_PAYOUT_BY_SUFFIX = {
    "002": outcomes.EXECUTION_FAILED,
    "003": outcomes.SLOW_SUCCESS,
    "004": outcomes.DELIVERY_FAILED,
    "005": outcomes.BANK_RETURN,
    "006": outcomes.USER_CANCELLED,
    "007": outcomes.PAYOUT_AND_REFUND_FAIL,
}
_PAYOUT_BY_UMA_BEHAVIOUR = {
    SUCCESS: outcomes.SUCCESS,
    LONG_PENDING: outcomes.LONG_PENDING,
    COMPLIANCE_FAILURE: outcomes.COMPLIANCE_FAILURE,
}


class SandboxRail:
    name = "sandbox"

    def transfer_outcome(self, identifier: str) -> str:
        suffix = external_service.magic_suffix(identifier)
        return sandbox_outcomes.TRANSFER_OUTCOMES.get(suffix, sandbox_outcomes.SUCCESS)

    def transfer_delay(self, outcome: str, settings: Settings) -> timedelta:
        if outcome == sandbox_outcomes.SLOW_FAILURE:
            return timedelta(seconds=settings.sandbox_slow_failure_seconds)
        if outcome == sandbox_outcomes.SLOW_SETTLEMENT:
            return timedelta(seconds=settings.sandbox_slow_settlement_seconds)
        return timedelta(seconds=settings.sandbox_settlement_seconds)

    def payout_outcome(self, identifier: str) -> str:
        return _PAYOUT_BY_SUFFIX.get(external_service.magic_suffix(identifier), outcomes.SUCCESS)

    def payout_delay(self, outcome: str, settings: Settings) -> timedelta:
        """How long the payout stays PROCESSING before it settles (or fails)."""
        if outcome == outcomes.SLOW_SUCCESS:
            return timedelta(seconds=settings.sandbox_quote_slow_seconds)
        if outcome == outcomes.LONG_PENDING:
            return timedelta(seconds=settings.sandbox_uma_long_pending_seconds)
        return timedelta(seconds=settings.sandbox_settlement_seconds)


class SandboxUmaNetwork:
    name = "sandbox"

    def counterparty(self, address: str, *, domain: str, username: str) -> Counterparty | None:
        if domain not in SANDBOX_DOMAINS:
            return None
        match = _SANDBOX_USER_RE.match(username)
        if not match or currencies.get(match.group(2).upper()) is None:
            return None
        code = match.group(2).upper()
        return Counterparty(
            address=address,
            currencies=(code,),
            behaviour=_BEHAVIOURS[match.group(1)],
            display_name=f"Sandbox {match.group(1).replace('.', ' ')} ({code})",
        )

    def payout_outcome(self, counterparty: Counterparty) -> str:
        return _PAYOUT_BY_UMA_BEHAVIOUR.get(counterparty.behaviour, outcomes.SUCCESS)


@SANDBOX_RAIL.implementation("sandbox")
def _rail(settings: Settings) -> PayoutRail:
    return SandboxRail()


@SANDBOX_UMA_NETWORK.implementation("sandbox")
def _uma(settings: Settings) -> UmaNetwork:
    return SandboxUmaNetwork()


def sandbox_counterparty(address: str) -> Counterparty | None:
    """The scripted sandbox counterparty at `address` (POST /sandbox/uma/receive's senders), if any."""
    lowered, username, domain = uma.normalize(address)
    return SandboxUmaNetwork().counterparty(lowered, domain=domain, username=username)
