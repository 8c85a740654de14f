from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, StrictBool
from typing_extensions import TypeAliasType

from platpay.kit.api_model import ApiModel, ApiRequest, FromString
from platpay.kit.money import MinorUnits
from platpay.kit.openapi import request_examples
from platpay.payments.quotes.schemas import FixedFee
from platpay.payments.schemas import TransactionType


class CustomerInfoFieldName(StrEnum):
    FULL_NAME = "FULL_NAME"
    BIRTH_DATE = "BIRTH_DATE"
    NATIONALITY = "NATIONALITY"
    PHONE_NUMBER = "PHONE_NUMBER"
    EMAIL = "EMAIL"
    POSTAL_ADDRESS = "POSTAL_ADDRESS"
    TAX_ID = "TAX_ID"
    REGISTRATION_NUMBER = "REGISTRATION_NUMBER"
    USER_TYPE = "USER_TYPE"
    COUNTRY_OF_RESIDENCE = "COUNTRY_OF_RESIDENCE"
    ACCOUNT_IDENTIFIER = "ACCOUNT_IDENTIFIER"
    FI_LEGAL_ENTITY_NAME = "FI_LEGAL_ENTITY_NAME"
    FI_ADDRESS = "FI_ADDRESS"
    PURPOSE_OF_PAYMENT = "PURPOSE_OF_PAYMENT"
    ULTIMATE_INSTITUTION_COUNTRY = "ULTIMATE_INSTITUTION_COUNTRY"
    IDENTIFIER = "IDENTIFIER"
    BUSINESS_TYPE = "BUSINESS_TYPE"
    COMPANY_LEGAL_NAME = "COMPANY_LEGAL_NAME"
    ID_TYPE = "ID_TYPE"
    ID_NUMBER = "ID_NUMBER"


MAX_AMOUNT = 9_000_000_000_000_000
EMAIL_PATTERN = r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$"


class CounterpartyFieldDefinition(ApiModel):
    name: CustomerInfoFieldName
    mandatory: bool


class CounterpartyFieldDefinitionIn(ApiRequest):
    name: Annotated[CustomerInfoFieldName, *FromString]
    mandatory: bool


class PlatformCurrencyConfigIn(ApiRequest):
    currency_code: str = Field(min_length=1, max_length=8, description="a code from the currency catalog")
    min_amount: MinorUnits = Field(ge=0, le=MAX_AMOUNT, description="smallest sendable amount, minor units")
    max_amount: MinorUnits = Field(ge=0, le=MAX_AMOUNT, description="largest sendable amount, minor units")
    required_counterparty_fields: list[CounterpartyFieldDefinitionIn] = Field(max_length=20)
    enabled_transaction_types: list[TransactionType] = Field(min_length=1, max_length=2)


class PlatformCurrencyConfig(ApiModel):
    currency_code: str
    min_amount: int
    max_amount: int
    required_counterparty_fields: list[CounterpartyFieldDefinition]
    enabled_transaction_types: list[TransactionType]
    provider_required_customer_fields: list[CustomerInfoFieldName] | None = Field(
        default=None, description="read-only; omitted when the provider requires nothing"
    )
    provider_required_counterparty_customer_fields: list[CustomerInfoFieldName] | None = Field(
        default=None, description="read-only; omitted when the provider requires nothing"
    )


class EmbeddedWalletConfig(ApiRequest):
    """Branding and OTP behaviour of the emails sent to EMAIL_OTP credentials: one model in PATCH /config
    (partial: omitted fields keep their values) and in PlatformConfig (the fields set; the others absent),
    as the reference has it. A response carries what a request stored, so it meets the same constraints."""

    app_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="shown in the OTP email",
        examples=["Acme Wallet"],
    )
    otp_length: int | None = Field(
        default=None, ge=4, le=12, description="OTP characters; 6 when not set", examples=[6]
    )
    alphanumeric: bool | None = Field(default=None, description="letters too; digits only when not set")
    expiration_seconds: int | None = Field(
        default=None, ge=1, le=86400, description="OTP validity; 300 when not set", examples=[300]
    )
    send_from_email_address: str | None = Field(
        default=None, max_length=255, pattern=EMAIL_PATTERN, examples=["noreply@acme.com"]
    )
    send_from_email_sender_name: str | None = Field(
        default=None, min_length=1, max_length=255, description='"Notifications" when not set'
    )
    reply_to_email_address: str | None = Field(default=None, max_length=255, pattern=EMAIL_PATTERN)
    logo_url: str | None = Field(default=None, max_length=512, pattern=r"^https?://\S+$")


FeeType = TypeAliasType("FeeType", Literal["CROSS_CURRENCY_TRANSACTION"])
CROSS_CURRENCY_TRANSACTION = "CROSS_CURRENCY_TRANSACTION"


class FeeConfig(ApiRequest):
    """A platform-collected fee (the reference's FeeConfig): on every transaction of `feeType` whose sending
    side is `sourceCurrency`, `fixedFee` plus `variableFeeBps` of the source-currency amount (rounded half up
    to a minor unit), included in the quote's feesIncluded and credited to the platform's internal account in
    that currency when the payment completes. At most one per (feeType, sourceCurrency)."""

    fee_type: FeeType
    source_currency: str = Field(
        min_length=1, max_length=8, description="the sending currency it applies to (USD)", examples=["USD"]
    )
    variable_fee_bps: int = Field(
        ge=0,
        le=10_000,
        description="basis points (1 bps = 0.01%) of the source-currency amount",
        examples=[30],
    )
    fixed_fee: FixedFee


class PlatformConfig(ApiModel):
    id: str = Field(examples=["PlatformConfig:019542f5-b3e7-1d02-0000-000000000003"])
    environment: Literal["sandbox", "production"] = Field(description="the environment these credentials use")
    uma_domain: str
    proxy_uma_subdomain: str
    webhook_endpoint: str | None = None
    webhook_public_key: str = Field(description="PEM (SPKI) P-256 key verifying X-Svc-Signature")
    supported_currencies: list[PlatformCurrencyConfig]
    is_regulated_financial_institution: bool
    embedded_wallet_config: EmbeddedWalletConfig | None = Field(
        default=None, description="only when configured"
    )
    end_user_terms_required: bool = Field(
        description="whether quotes for a customer need its acceptance of the current End User Terms "
        "(endUserTermsConsent; 403 END_USER_TERMS_NOT_ACCEPTED otherwise); off unless turned on"
    )
    fee_configs: list[FeeConfig] | None = Field(
        default=None, description="every active platform fee config; omitted when there is none"
    )
    created_at: datetime
    updated_at: datetime


class PlatformConfigUpdateRequest(ApiRequest):
    """Partial update: omitted fields keep their values; `webhookEndpoint: null` removes the endpoint."""

    uma_domain: str | None = Field(default=None, min_length=1, max_length=253)
    webhook_endpoint: str | None = Field(default=None, max_length=2048)
    supported_currencies: list[PlatformCurrencyConfigIn] | None = Field(
        default=None, min_length=1, max_length=50
    )
    embedded_wallet_config: EmbeddedWalletConfig | None = Field(
        default=None, description="partial: omitted nested fields keep their values"
    )
    end_user_terms_required: StrictBool | None = Field(
        default=None,
        description="require the customer's acceptance of the current End User Terms (GET "
        "/customers/end-user-terms) before its quotes; off by default",
    )
    fee_configs: list[FeeConfig] | None = Field(
        default=None,
        max_length=20,
        description="merge-by-key upsert keyed by (feeType, sourceCurrency); a config whose variable and "
        "fixed fees are both 0 removes that key's config; omitted: fee configs unchanged",
    )


CONFIG_UPDATE_EXAMPLES = request_examples(
    feeConfigs=(
        "Collect 0.30% plus $0.50 on every cross-currency payment sent from USD",
        {
            "feeConfigs": [
                {
                    "feeType": "CROSS_CURRENCY_TRANSACTION",
                    "sourceCurrency": "USD",
                    "variableFeeBps": 30,
                    "fixedFee": {"amount": 50, "currency": "USD"},
                }
            ]
        },
    ),
    endUserTermsRequired=(
        "Require your customers' acceptance of the End User Terms before their quotes",
        {"endUserTermsRequired": True},
    ),
    webhookEndpoint=(
        "Receive webhooks at your endpoint (a signed TEST event is sent to it)",
        {"webhookEndpoint": "https://api.example.com/webhooks/platpay"},
    ),
    supportedCurrencies=(
        "Send USD and EUR, with limits and the counterparty fields you require",
        {
            "supportedCurrencies": [
                {
                    "currencyCode": "USD",
                    "minAmount": 100,
                    "maxAmount": 1000000,
                    "requiredCounterpartyFields": [{"name": "FULL_NAME", "mandatory": True}],
                    "enabledTransactionTypes": ["OUTGOING", "INCOMING"],
                },
                {
                    "currencyCode": "EUR",
                    "minAmount": 100,
                    "maxAmount": 1000000,
                    "requiredCounterpartyFields": [],
                    "enabledTransactionTypes": ["OUTGOING"],
                },
            ]
        },
    ),
)
