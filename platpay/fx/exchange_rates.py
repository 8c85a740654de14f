"""GET /exchange-rates: the cached rate of every payout corridor, with this platform's fees applied to a
sending amount. A corridor is a destination currency and bank payment rail (accounts/data/corridors.json);
SWIFT is listed for a fiat currency without a dedicated corridor only when that currency is asked for.
Wallet (crypto) destinations have no payment rail and are quoted through POST /quotes only."""

from __future__ import annotations

from functools import cache as memoize

from platpay.accounts.validators.corridor_specs import BANK, account_type_specs
from platpay.fx import cache, fees, pricing, rates
from platpay.fx.providers import UnsupportedCurrencyPair
from platpay.fx.schemas import ExchangeRate, ExchangeRateFees, ExchangeRateListResponse
from platpay.kit import currencies
from platpay.tenants.context import TenantContext
from platpay.tenants.service import DEFAULT_MAX_AMOUNT

DEFAULT_SENDING_AMOUNT = 10_000


@memoize
def payout_corridors() -> dict[str, tuple[str, ...]]:
    """Destination currency -> the bank rails that pay it out, in catalog order."""
    found: dict[str, list[str]] = {}
    for spec in account_type_specs().values():
        if spec.kind != BANK:
            continue
        for code in spec.currencies:
            rails = found.setdefault(code, [])
            rails.extend(rail for rail in spec.payment_rails if rail not in rails)
    return {code: tuple(rails) for code, rails in sorted(found.items())}


def sending_limits(tenant: TenantContext, currency: str) -> tuple[int, int]:
    """The platform's configured min/max for a sending currency (defaults when it is not configured)."""
    entry = next((c for c in tenant.supported_currencies if c["currencyCode"] == currency), None)
    if entry is None:
        return 1, DEFAULT_MAX_AMOUNT
    return entry["minAmount"], entry["maxAmount"]


def _rails_for(code: str, *, asked: bool) -> tuple[str, ...]:
    rails = payout_corridors().get(code)
    if rails:
        return rails
    known = currencies.get(code)
    return ("SWIFT",) if asked and known is not None and known.kind == "FIAT" else ()


def _entry(
    tenant: TenantContext,
    *,
    source: str,
    destination: str,
    rail: str,
    sending_amount: int,
    ttl_seconds: float,
) -> ExchangeRate | None:
    try:
        cached = cache.get(source, destination, ttl_seconds=ttl_seconds)
    except UnsupportedCurrencyPair:
        return None  # a provider without this pair simply has no corridor for it
    rule = fees.rule_for(rail)
    fixed = rule.fixed_in(source)
    total_fees = fixed + pricing.variable_fee(sending_amount, rule.variable_bps)
    try:
        receiving = pricing.price(
            locked_side=pricing.SENDING,
            locked_amount=sending_amount,
            minor_rate=rates.minor_rate(cached.rate.customer_rate, source, destination),
            fixed_fee=fixed,
            variable_bps=rule.variable_bps,
        ).receiving_amount
    except (pricing.AmountTooSmall, ValueError):  # nothing left after fees, or a zero sending amount
        receiving = 0
    low, high = sending_limits(tenant, source)
    return ExchangeRate(
        source_currency=currencies.require(source).as_api(),
        destination_currency=currencies.require(destination).as_api(),
        destination_payment_rail=rail,
        sending_amount=sending_amount,
        min_sending_amount=low,
        max_sending_amount=high,
        receiving_amount=receiving,
        exchange_rate=float(rates.to_decimal(cached.rate.customer_rate)),
        fees=ExchangeRateFees(fixed=fixed, total=total_fees),
        updated_at=cached.fetched_at,
    )


def list_exchange_rates(
    *,
    tenant: TenantContext,
    source_currency: str | None,
    destination_currencies: list[str],
    sending_amount: int,
    ttl_seconds: float,
) -> ExchangeRateListResponse:
    sources = (
        [currencies.require(source_currency, field="sourceCurrency").code]
        if source_currency
        else tenant.currency_codes
    )
    asked = [
        currencies.require(code, field="destinationCurrency").code
        for code in dict.fromkeys(destination_currencies)
    ]
    destinations = asked or list(payout_corridors())
    entries = (
        _entry(
            tenant,
            source=source,
            destination=destination,
            rail=rail,
            sending_amount=sending_amount,
            ttl_seconds=ttl_seconds,
        )
        for source in sources
        for destination in destinations
        if destination != source
        for rail in _rails_for(destination, asked=bool(asked))
    )
    return ExchangeRateListResponse(data=[entry for entry in entries if entry is not None])
