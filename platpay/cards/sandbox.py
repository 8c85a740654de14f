"""The sandbox card issuer (providers.py): the magic values of INTERFACE-FACTS §7.

- `platformCardId` last three characters (else the cardholder id's): `001` stays PENDING_ISSUE, `002` is
  rejected (CLOSED + ISSUER_REJECTED), `005` activates after PLATPAY_SANDBOX_CARD_DELAY_SECONDS, any other
  activates at once (a deterministic test number: `last4` is the same for the same card id).
- a funding source's account id ending `002` or `003`: FUNDING_SOURCE_INELIGIBLE.
- `merchant.descriptor` last three: `002` declines INSUFFICIENT_FUNDS, `003` declines CARD_PAUSED, `005`
  approves with the pull confirmed after the delay, `006` approves and the pull's confirmation FAILS
  (EXCEPTION); any other goes to platpay's decisioning.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from platpay.cards import providers as p
from platpay.config import Settings

_AUTHORIZATION = {
    "002": p.DECLINE_INSUFFICIENT_FUNDS,
    "003": p.DECLINE_CARD_PAUSED,
    "005": p.DELAYED_PULL,
    "006": p.PULL_FAILS,
}


class SandboxIssuer:
    name = "sandbox"
    static_3ds_password = True

    def provisioning(
        self, *, platform_card_id: str, cardholder_id: str, settings: Settings
    ) -> p.Provisioning:
        suffix = (platform_card_id or cardholder_id)[-3:]
        if suffix == "001":
            return p.Provisioning(p.STAY_PENDING)
        if suffix == "002":
            return p.Provisioning(p.REJECT)
        if suffix == "005":
            return p.Provisioning(p.ACTIVATE, timedelta(seconds=settings.sandbox_card_delay_seconds))
        return p.Provisioning(p.ACTIVATE)

    def issue(self, *, card_id: str, at: datetime) -> p.IssuedCard:
        return p.derived_card(card_id, at)

    def funding_source_eligible(self, account_id: str) -> bool:
        return account_id[-3:] not in ("002", "003")

    def authorization_outcome(self, descriptor: str) -> str:
        return _AUTHORIZATION.get(descriptor[-3:], p.APPROVE)

    def pull_delay(self, settings: Settings) -> timedelta:
        return timedelta(seconds=settings.sandbox_card_delay_seconds)


@p.SANDBOX_ISSUER.implementation("sandbox")
def _sandbox(settings: Settings) -> p.CardIssuer:
    return SandboxIssuer()
