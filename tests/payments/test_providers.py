"""Payout rails and UMA networks: sandbox tenants get the sandbox's (magic values), production tenants the
configured ones; the environment is chosen in one place."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from platpay.config import Settings
from platpay.payments import providers
from platpay.payments.sandbox import SandboxRail, SandboxUmaNetwork
from platpay.tenants.context import PRODUCTION, SANDBOX, TenantContext

_TENANT = TenantContext(
    id="Tenant:t",
    platform_id="Platform:p",
    environment=SANDBOX,
    is_regulated=False,
    config_id="PlatformConfig:c",
    uma_domain="example.com",
    webhook_endpoint=None,
    supported_currencies=[],
    webhook_public_key_pem="",
    created_at=datetime(2026, 1, 1, tzinfo=UTC),
    updated_at=datetime(2026, 1, 1, tzinfo=UTC),
)
_PRODUCTION = dataclasses.replace(_TENANT, environment=PRODUCTION)


class DecliningRail(providers.SimulatedRail):
    name = "declining"

    def transfer_outcome(self, identifier: str) -> str:
        return "BANK_REJECTED"


def declining(settings: Settings) -> DecliningRail:
    return DecliningRail()


@pytest.fixture(autouse=True)
def _restore():
    yield
    providers.RAIL.use(None)


def test_sandbox_tenants_get_the_magic_values_production_tenants_do_not() -> None:
    assert isinstance(providers.rail_for(_TENANT), SandboxRail)
    assert providers.rail_for(_TENANT).transfer_outcome("123456002") == "INSUFFICIENT_FUNDS"
    assert providers.rail_for(_PRODUCTION).transfer_outcome("123456002") == providers.SUCCESS
    assert isinstance(providers.uma_network_for(_TENANT), SandboxUmaNetwork)
    address = "$success.mxn@sandbox.uma.money"
    found = providers.uma_network_for(_TENANT).counterparty(
        address, domain="sandbox.uma.money", username="success.mxn"
    )
    assert found is not None and found.currencies == ("MXN",)
    assert (
        providers.uma_network_for(_PRODUCTION).counterparty(
            address, domain="sandbox.uma.money", username="success.mxn"
        )
        is None
    )


def test_a_deployment_plugs_its_own_production_rail(tmp_path) -> None:
    providers.RAIL.configure(
        Settings(var_dir=tmp_path, payout_rail="tests.payments.test_providers:declining")
    )
    assert providers.rail_for(_PRODUCTION).transfer_outcome("123456789") == "BANK_REJECTED"
    assert isinstance(providers.rail_for(_TENANT), SandboxRail)  # sandbox credentials never reach it
