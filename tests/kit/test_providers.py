"""Provider slots: the sandbox by default, a registered name or an import path from the settings, a clear
error for anything else."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

import pytest

from platpay.config import Settings
from platpay.fx import rates
from platpay.fx.providers import RATES, RateQuote, SandboxRateProvider
from platpay.kit.providers import ProviderNotFound


class FixedRates:
    """A rate provider outside the registry, named by import path."""

    name = "fixed"

    def rate(self, source_currency: str, destination_currency: str) -> RateQuote:
        return RateQuote(
            source_currency, destination_currency, Fraction(2), 0, datetime(2026, 1, 1, tzinfo=UTC)
        )


def fixed_rates(settings: Settings) -> FixedRates:
    return FixedRates()


@pytest.fixture(autouse=True)
def _restore() -> None:
    yield
    RATES.use(None)


def test_the_sandbox_is_the_default(tmp_path) -> None:
    assert isinstance(RATES.configure(Settings(var_dir=tmp_path)), SandboxRateProvider)
    assert "sandbox" in RATES.names()


def test_an_import_path_names_an_adapter_outside_the_registry(tmp_path) -> None:
    RATES.configure(Settings(var_dir=tmp_path, fx_rate_provider="tests.kit.test_providers:fixed_rates"))
    assert rates.mid_rate("USD", "EUR") == 2  # the domain's helpers use whatever the slot holds


def test_an_unknown_name_is_refused_at_startup(tmp_path) -> None:
    with pytest.raises(ProviderNotFound, match="PLATPAY_FX_RATE_PROVIDER='nope'"):
        RATES.configure(Settings(var_dir=tmp_path, fx_rate_provider="nope"))
