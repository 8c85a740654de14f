"""What cards need from outside (kit/providers.py): a card issuer and its network.

Two slots, like payments' rails: production tenants use PLATPAY_CARD_ISSUER (`simulated` by default:
every card activates at once, every authorization is decided by platpay alone), sandbox tenants
PLATPAY_SANDBOX_CARD_ISSUER (`sandbox`, cards/sandbox.py: the magic values of INTERFACE-FACTS §7).
`issuer_for` / `issuer_of` are the one place the environment picks; no other cards code asks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.kit.providers import Slot
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

# How provisioning ends.
ACTIVATE, REJECT, STAY_PENDING = "ACTIVATE", "REJECT", "STAY_PENDING"
# What the network says of an authorization beside platpay's own decisioning.
APPROVE = "APPROVE"
DECLINE_INSUFFICIENT_FUNDS = "DECLINE_INSUFFICIENT_FUNDS"
DECLINE_CARD_PAUSED = "DECLINE_CARD_PAUSED"
DELAYED_PULL = "DELAYED_PULL"  # the pull is confirmed later (pullSummary.pendingCount until then)
PULL_FAILS = "PULL_FAILS"  # the pull's confirmation reports FAILED: EXCEPTION


@dataclass(frozen=True, slots=True)
class Provisioning:
    outcome: str  # ACTIVATE | REJECT | STAY_PENDING
    delay: timedelta = timedelta(0)


@dataclass(frozen=True, slots=True)
class IssuedCard:
    brand: str
    pan: str
    cvv: str
    exp_month: int
    exp_year: int
    issuer_ref: str
    processor_ref: str  # what the card processor calls the card

    @property
    def last4(self) -> str:
        return self.pan[-4:]


class CardIssuer(Protocol):
    name: str
    # whether the program takes a static 3-D Secure password on create (threeDSecurePassword); one that does
    # not refuses it (400 naming the field)
    static_3ds_password: bool

    def provisioning(self, *, platform_card_id: str, cardholder_id: str, settings: Settings) -> Provisioning:
        """How issuing a card with these ids will go."""
        ...

    def issue(self, *, card_id: str, at: datetime) -> IssuedCard:
        """The card's number and details (stable for a card id: the embed page shows them again)."""
        ...

    def funding_source_eligible(self, account_id: str) -> bool: ...

    def authorization_outcome(self, descriptor: str) -> str: ...

    def pull_delay(self, settings: Settings) -> timedelta: ...


ISSUER: Slot[CardIssuer] = Slot("card_issuer", default="simulated")
SANDBOX_ISSUER: Slot[CardIssuer] = Slot("sandbox_card_issuer")


def issuer_for(tenant: TenantContext) -> CardIssuer:
    return SANDBOX_ISSUER.get() if tenant.is_sandbox else ISSUER.get()


def simulation_issuer() -> CardIssuer:
    """The issuer whose network a sandbox simulation speaks for (a simulation is accepted only from a
    sandbox tenant: the job that applies it needs no lookup of the environment)."""
    return SANDBOX_ISSUER.get()


async def issuer_of(session: AsyncSession, *, tenant_id: str) -> CardIssuer:
    """The issuer of a tenant known by id (jobs)."""
    sandbox = await tenants_service.is_sandbox(session, tenant_id=tenant_id)
    return SANDBOX_ISSUER.get() if sandbox else ISSUER.get()


def _luhn_digit(body: str) -> str:
    total = 0
    for index, char in enumerate(reversed(body)):
        digit = int(char)
        if index % 2 == 0:
            digit *= 2
            digit -= 9 if digit > 9 else 0
        total += digit
    return str((10 - total % 10) % 10)


def derived_card(card_id: str, at: datetime, *, prefix: str = "4", brand: str = "VISA") -> IssuedCard:
    """A Luhn-valid test card number, CVV and expiry derived from the card id (never a real PAN)."""
    digest = hashlib.sha256(card_id.encode()).hexdigest()
    digits = "".join(str(int(c, 16) % 10) for c in digest)
    body = (prefix + digits)[:15]
    return IssuedCard(
        brand=brand,
        pan=body + _luhn_digit(body),
        cvv=digits[20:23],
        exp_month=at.month,
        exp_year=at.year + 3,
        issuer_ref=f"{brand.lower()}_card_{digest[:16]}",
        processor_ref=f"card_{digest[16:32]}",  # migration 0018 backfills issued cards with it
    )


class SimulatedIssuer:
    name = "simulated"
    static_3ds_password = True

    def provisioning(self, *, platform_card_id: str, cardholder_id: str, settings: Settings) -> Provisioning:
        return Provisioning(ACTIVATE)

    def issue(self, *, card_id: str, at: datetime) -> IssuedCard:
        return derived_card(card_id, at)

    def funding_source_eligible(self, account_id: str) -> bool:
        return True

    def authorization_outcome(self, descriptor: str) -> str:
        return APPROVE

    def pull_delay(self, settings: Settings) -> timedelta:
        return timedelta(0)


@ISSUER.implementation("simulated")
def _simulated(settings: Settings) -> CardIssuer:
    return SimulatedIssuer()
