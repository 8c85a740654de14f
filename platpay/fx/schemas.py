"""Request and response bodies of GET /exchange-rates."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from platpay.kit.api_model import ApiModel
from platpay.kit.money import Currency

MAX_AMOUNT = 9_000_000_000_000_000
EXCHANGE_RATE_DOC = (
    "receiving-currency units per one sending-currency unit (major units, spread applied, fees excluded): "
    "totalReceivingAmount = floor((totalSendingAmount - feesIncluded) x exchangeRate), as in the "
    "reference's examples (USD->EUR 0.92)"
)


class ExchangeRateFees(ApiModel):
    fixed: int = Field(ge=0, description="minor units of the source currency")
    total: int = Field(
        ge=0, description="fixed + variable for sendingAmount, minor units of the source currency"
    )


class ExchangeRate(ApiModel):
    source_currency: Currency
    destination_currency: Currency
    destination_payment_rail: str
    sending_amount: int = Field(ge=0)
    min_sending_amount: int = Field(ge=0)
    max_sending_amount: int = Field(ge=0)
    receiving_amount: int = Field(
        ge=0, description="what sendingAmount would deliver after fees (0: too small)"
    )
    exchange_rate: float = Field(gt=0, description=EXCHANGE_RATE_DOC)
    fees: ExchangeRateFees
    updated_at: datetime = Field(description="when this rate was fetched; rates are cached about 5 minutes")


class ExchangeRateListResponse(ApiModel):
    data: list[ExchangeRate]
