"""Request and response bodies of quotes, receiver lookups and POST /sandbox/send."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import JsonDict
from typing_extensions import TypeAliasType

from platpay.accounts.schemas import PaymentInstructions
from platpay.fx.schemas import EXCHANGE_RATE_DOC
from platpay.kit.api_model import ApiModel, ApiRequest, NullRefused
from platpay.kit.money import Currency, MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.payments.schemas import DEFAULT_RAIL, MAX_AMOUNT, REMITTANCE_INFORMATION_MAX, PurposeOfPayment

QuoteStatus = Literal["PENDING", "PROCESSING", "COMPLETED", "FAILED", "EXPIRED"]
CryptoNetwork = Literal["SOLANA", "ETHEREUM", "BASE", "POLYGON", "SPARK", "LIGHTNING", "BITCOIN", "TRON"]


QuoteLockSide = TypeAliasType("QuoteLockSide", Literal["SENDING", "RECEIVING"])


class AccountQuoteSource(ApiRequest):
    source_type: Literal["ACCOUNT"]
    account_id: str = Field(
        min_length=1,
        max_length=64,
        description="an internal account, or an external account that supports pull (USD_ACCOUNT: ACH debit)",
    )
    customer_id: Annotated[str | None, NullRefused("for the account's owner")] = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="funding from a platform (FBO) account on a customer's behalf; otherwise the account's owner",
    )


class RealtimeFundingQuoteSource(ApiRequest):
    source_type: Literal["REALTIME_FUNDING"]
    currency: str = Field(min_length=1, max_length=8, description="the currency the payer sends in")
    customer_id: Annotated[str | None, NullRefused("for the platform itself to pay")] = Field(
        default=None, min_length=1, max_length=64, description="absent: the platform itself pays"
    )
    crypto_network: CryptoNetwork | None = Field(
        default=None, description="required for stablecoins (USDC, USDT): where the deposit is sent"
    )


class UmaAddressQuoteSource(ApiRequest):
    source_type: Literal["UMA_ADDRESS"]
    uma_address: str = Field(min_length=1, max_length=320, description="one of this platform's customers")
    currency: str = Field(min_length=1, max_length=8, description="the currency the payer sends in")


QuoteSourceOneOf = TypeAliasType(
    "QuoteSourceOneOf",
    Annotated[
        AccountQuoteSource | RealtimeFundingQuoteSource | UmaAddressQuoteSource,
        Field(discriminator="source_type"),
    ],
)


class AccountDestination(ApiRequest):
    destination_type: Literal["ACCOUNT"]
    account_id: str = Field(min_length=1, max_length=64, description="an external or internal account")
    payment_rail: Annotated[str | None, DEFAULT_RAIL] = Field(
        default=None, min_length=1, max_length=24, description="one of the external account's paymentRails"
    )


class UmaAddressDestination(ApiRequest):
    destination_type: Literal["UMA_ADDRESS"]
    uma_address: str = Field(min_length=1, max_length=320)
    currency: Annotated[str | None, NullRefused("for the receiver's first currency")] = Field(
        default=None, min_length=1, max_length=8, description="default: the receiver's first currency"
    )


QuoteDestinationOneOf = TypeAliasType(
    "QuoteDestinationOneOf",
    Annotated[AccountDestination | UmaAddressDestination, Field(discriminator="destination_type")],
)


class FixedFee(ApiRequest):
    """A fixed fee per transaction: `amount` minor units of `currency` (the reference's FixedFee)."""

    amount: MinorUnits = Field(ge=0, le=MAX_AMOUNT, description="minor units of `currency`", examples=[50])
    currency: str = Field(
        min_length=1, max_length=8, description="the quote's source currency", examples=["USD"]
    )


class PlatformFeeOverride(ApiRequest):
    """Replaces the platform's configured fee (PlatformConfig.feeConfigs) for this quote: `platformFixedFee`
    plus `platformVariableFeeBps` of totalSendingAmount (rounded half up), part of feesIncluded. Only for a
    USD source, as the reference has it; the fixed fee is in the source currency."""

    platform_fixed_fee: FixedFee
    platform_variable_fee_bps: int = Field(
        ge=0, le=10_000, description="basis points (1 bps = 0.01%) of totalSendingAmount", examples=[30]
    )


def _without_default(schema: JsonDict) -> None:
    schema.pop("default", None)


class QuoteRequest(ApiRequest):
    lookup_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="from GET /receiver/...; required for UMA destinations and must name the same receiver",
    )
    source: QuoteSourceOneOf
    destination: QuoteDestinationOneOf
    locked_currency_side: QuoteLockSide
    locked_currency_amount: MinorUnits = Field(
        gt=0, le=MAX_AMOUNT, description="minor units of the locked side's currency"
    )
    immediately_execute: bool = Field(
        default=False,
        description="execute in the same request (account sources only, not EMBEDDED_WALLET); default false",
        # Documented without its default, as the reference has it: a generated TypeScript type would make
        # a property with a default required.
        json_schema_extra=_without_default,
    )
    description: str | None = Field(default=None, max_length=500)
    remittance_information: str | None = Field(
        default=None,
        min_length=1,
        max_length=REMITTANCE_INFORMATION_MAX,
        description="travels with the payment to the recipient (kept on the quote's transaction)",
    )
    purpose_of_payment: PurposeOfPayment | None = None
    sender_customer_info: dict[str, Any] | None = Field(
        default=None, description="extra sender information the receiver asked for, by CustomerInfoFieldName"
    )
    platform_fee_override: PlatformFeeOverride | None = Field(
        default=None, description="this quote's platform fee instead of the configured one (feeConfigs)"
    )


class OutgoingRateDetails(ApiModel):
    counterparty_multiplier: float = Field(
        gt=0, description="the receiving side's own multiplier (sandbox: 1)"
    )
    counterparty_fixed_fee: int = Field(ge=0, description="receiving currency minor units (sandbox: 0)")
    grid_api_multiplier: float = Field(gt=0, description="the customer rate, as exchangeRate")
    grid_api_fixed_fee: int = Field(ge=0, description="sending currency minor units")
    grid_api_variable_fee_rate: float = Field(ge=0, description="fraction of totalSendingAmount")
    grid_api_variable_fee_amount: int = Field(ge=0, description="sending currency minor units")


class Quote(ApiModel):
    id: str = Field(examples=["Quote:019542f5-b3e7-1d02-0000-000000000006"])
    status: QuoteStatus
    created_at: datetime
    expires_at: datetime
    source: dict[str, Any]
    destination: dict[str, Any]
    sending_currency: Currency
    receiving_currency: Currency
    total_sending_amount: int = Field(gt=0, description="minor units of the sending currency, fees included")
    total_receiving_amount: int = Field(gt=0, description="minor units of the receiving currency")
    exchange_rate: float = Field(gt=0, description=EXCHANGE_RATE_DOC)
    fees_included: int = Field(
        ge=0,
        description="minor units of the sending currency, the platform's fee (platformFeesIncluded) included",
    )
    platform_fees_included: int | None = Field(
        default=None,
        ge=0,
        description="the platform-collected part of feesIncluded (feeConfigs or platformFeeOverride); 0 "
        "without an applicable fee",
    )
    transaction_id: str = Field(description="the OUTGOING transaction, which exists from creation")
    payment_instructions: list[PaymentInstructions] | None = Field(
        default=None, description="real-time funding: where to send totalSendingAmount"
    )
    counterparty_information: dict[str, Any] | None = None
    rate_details: OutgoingRateDetails | None = None


class CurrencyPreference(ApiModel):
    currency: Currency
    estimated_exchange_rate: float = Field(gt=0, description="from the sender's currency; not locked")
    min: int = Field(gt=0, description="smallest receivable amount, minor units")
    max: int = Field(gt=0, description="largest receivable amount, minor units")


class PayerDataField(ApiModel):
    name: str
    mandatory: bool


class ReceiverUmaLookupResponse(ApiModel):
    receiver_uma_address: str
    supported_currencies: list[CurrencyPreference]
    required_payer_data_fields: list[PayerDataField] | None = None
    lookup_id: str = Field(examples=["Lookup:019542f5-b3e7-1d02-0000-000000000009"])


class ReceiverExternalAccountLookupResponse(ApiModel):
    account_id: str
    supported_currencies: list[CurrencyPreference]
    required_payer_data_fields: list[PayerDataField] | None = None
    lookup_id: str = Field(examples=["Lookup:019542f5-b3e7-1d02-0000-000000000009"])


class SandboxSendRequest(ApiRequest):
    quote_id: str = Field(min_length=1, max_length=64)
    currency_code: str = Field(min_length=1, max_length=8, description="must be the quote's sending currency")
    currency_amount: Annotated[MinorUnits | None, NullRefused("to send the quote's totalSendingAmount")] = (
        Field(default=None, gt=0, le=MAX_AMOUNT, description="default: the quote's totalSendingAmount")
    )


QUOTE_REQUEST_EXAMPLES = request_examples(
    accountToAccount=(
        "Send $100 from an internal account to a Mexican bank account (CLABE), paid in MXN",
        {
            "source": {"sourceType": "ACCOUNT", "accountId": ExampleIds.INTERNAL_ACCOUNT},
            "destination": {"destinationType": "ACCOUNT", "accountId": ExampleIds.MXN_EXTERNAL_ACCOUNT},
            "lockedCurrencySide": "SENDING",
            "lockedCurrencyAmount": 10000,
            "description": "Invoice 1234",
        },
    ),
    realtimeFunding=(
        "Real-time funding: the customer pays in USD to the returned instructions; the recipient gets MXN",
        {
            "source": {
                "sourceType": "REALTIME_FUNDING",
                "customerId": ExampleIds.CUSTOMER,
                "currency": "USD",
            },
            "destination": {"destinationType": "ACCOUNT", "accountId": ExampleIds.MXN_EXTERNAL_ACCOUNT},
            "lockedCurrencySide": "RECEIVING",
            "lockedCurrencyAmount": 50000,
        },
    ),
)
SANDBOX_SEND_EXAMPLES = request_examples(
    payQuote=(
        "Pay a real-time-funded quote's whole totalSendingAmount",
        {"quoteId": ExampleIds.QUOTE, "currencyCode": "USD"},
    )
)
