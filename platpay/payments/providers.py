"""What payments needs from the outside world (kit/providers.py): a payout rail and a UMA network.

Each has two slots: the one production tenants use (PLATPAY_PAYOUT_RAIL, PLATPAY_UMA_NETWORK) and the one
sandbox tenants use (PLATPAY_SANDBOX_PAYOUT_RAIL, PLATPAY_SANDBOX_UMA_NETWORK, both `sandbox` by default:
payments/sandbox.py, the magic values of INTERFACE-FACTS §7). `rail_for` / `uma_network_for` are the one
place the environment picks between them; no other payments code asks whether a tenant is a sandbox.

The production defaults stand in for adapters a deployment plugs in (`package.module:factory`):
`simulated` settles every payment after PLATPAY_SANDBOX_SETTLEMENT_SECONDS, `offline` knows no UMA
counterparty beyond the tenant's own customers (platpay makes no network calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from platpay.config import Settings
from platpay.db.unit_of_work import LeanSession
from platpay.kit.providers import Slot
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

SUCCESS = "SUCCESS"  # the outcome label of a payment that goes through
# How a UMA counterparty behaves (the sandbox scripts the other two).
LONG_PENDING, COMPLIANCE_FAILURE = "LONG_PENDING", "COMPLIANCE_FAILURE"


@dataclass(frozen=True)
class Counterparty:
    """Someone reachable at a UMA address: a remote counterparty or one of the tenant's customers."""

    address: str
    currencies: tuple[str, ...]
    behaviour: str  # SUCCESS | LONG_PENDING | COMPLIANCE_FAILURE
    customer_id: str | None = None  # set for the tenant's own customers
    display_name: str = ""

    @property
    def is_local(self) -> bool:
        return self.customer_id is not None


class PayoutRail(Protocol):
    """A bank or crypto rail, asked when a payment is created how it will end (an outcome label that the
    settlement steps act on: SUCCESS or a failure label) and how long it stays in flight."""

    name: str

    def transfer_outcome(self, identifier: str) -> str:
        """A same-currency transfer (push or pull) to or from the account with this primary identifier."""
        ...

    def transfer_delay(self, outcome: str, settings: Settings) -> timedelta: ...

    def payout_outcome(self, identifier: str) -> str:
        """A quote's payout to the external account with this primary identifier."""
        ...

    def payout_delay(self, outcome: str, settings: Settings) -> timedelta: ...


class UmaNetwork(Protocol):
    """UMA counterparties on other domains."""

    name: str

    def counterparty(self, address: str, *, domain: str, username: str) -> Counterparty | None: ...

    def payout_outcome(self, counterparty: Counterparty) -> str: ...


RAIL: Slot[PayoutRail] = Slot("payout_rail", default="simulated")
SANDBOX_RAIL: Slot[PayoutRail] = Slot("sandbox_payout_rail")
UMA_NETWORK: Slot[UmaNetwork] = Slot("uma_network", default="offline")
SANDBOX_UMA_NETWORK: Slot[UmaNetwork] = Slot("sandbox_uma_network")


def rail_for(tenant: TenantContext) -> PayoutRail:
    return SANDBOX_RAIL.get() if tenant.is_sandbox else RAIL.get()


async def rail_of(session: LeanSession, *, tenant_id: str) -> PayoutRail:
    """The rail of a tenant known by id (jobs)."""
    return (
        SANDBOX_RAIL.get() if await tenants_service.is_sandbox(session, tenant_id=tenant_id) else RAIL.get()
    )


def uma_network_for(tenant: TenantContext) -> UmaNetwork:
    return SANDBOX_UMA_NETWORK.get() if tenant.is_sandbox else UMA_NETWORK.get()


class SimulatedRail:
    name = "simulated"

    def transfer_outcome(self, identifier: str) -> str:
        return SUCCESS

    def transfer_delay(self, outcome: str, settings: Settings) -> timedelta:
        return timedelta(seconds=settings.sandbox_settlement_seconds)

    def payout_outcome(self, identifier: str) -> str:
        return SUCCESS

    def payout_delay(self, outcome: str, settings: Settings) -> timedelta:
        return timedelta(seconds=settings.sandbox_settlement_seconds)


class OfflineUmaNetwork:
    name = "offline"

    def counterparty(self, address: str, *, domain: str, username: str) -> Counterparty | None:
        return None

    def payout_outcome(self, counterparty: Counterparty) -> str:
        return SUCCESS


@RAIL.implementation("simulated")
def _simulated(settings: Settings) -> PayoutRail:
    return SimulatedRail()


@UMA_NETWORK.implementation("offline")
def _offline(settings: Settings) -> UmaNetwork:
    return OfflineUmaNetwork()
