"""The UMA provider directory (GET /uma-providers): a catalog shipped in data/uma_providers.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from platpay.kit import currencies
from platpay.kit.pagination import PageParams, PageResult, paginate_items
from platpay.payments.lookups.schemas import UmaProvider


@dataclass(frozen=True)
class Listing:
    provider: UmaProvider
    listed_on: str  # ISO date the provider joined the directory: the list's order
    sandbox_only: bool


@cache
def catalog() -> tuple[Listing, ...]:
    """Every provider, oldest listing first (ties broken by domain, which is unique)."""
    raw = json.loads(
        resources.files("platpay.payments").joinpath("data/uma_providers.json").read_text("utf-8")
    )
    listings = [
        Listing(
            provider=UmaProvider(
                name=item["name"],
                supported_regions=item["supportedRegions"],
                domain=item["domain"],
                logo_url=item["logoUrl"],
                supported_currencies=[
                    currencies.require(code).as_api() for code in item["supportedCurrencies"]
                ],
                lei=item["lei"],
                allow_list_status=item["allowListStatus"],
            ),
            listed_on=item["listedOn"],
            sandbox_only=item["sandboxOnly"],
        )
        for item in raw["providers"]
    ]
    domains = [listing.provider.domain for listing in listings]
    if len(set(domains)) != len(domains):
        raise ValueError("uma_providers.json lists a domain twice")
    return tuple(sorted(listings, key=lambda listing: (listing.listed_on, listing.provider.domain)))


def list_providers(
    *,
    sandbox: bool,
    params: PageParams,
    country_code: str | None = None,
    currency_code: str | None = None,
    include_blocked: bool = True,
) -> PageResult[UmaProvider]:
    """Filters combine; newest listing first unless params ask for ascending order."""
    matching = [
        listing.provider
        for listing in catalog()
        if (sandbox or not listing.sandbox_only)
        and (country_code is None or country_code in listing.provider.supported_regions)
        and (
            currency_code is None
            or any(currency.code == currency_code for currency in listing.provider.supported_currencies)
        )
        and (include_blocked or listing.provider.allow_list_status)
    ]
    if params.descending:
        matching.reverse()
    return paginate_items(matching, key=lambda provider: provider.domain, params=params)
