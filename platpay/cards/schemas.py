"""Cards' request and response bodies, named as the reference names them (CardCreateRequest, Card, …);
ours beyond it (CardRefund, CardTransactionListResponse, CardCurrencyRef) are listed in
tests/data/openapi_additions.json."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer
from typing_extensions import TypeAliasType

from platpay.kit.api_model import KEPT_WHEN_OMITTED, ApiModel, ApiRequest, NullRefused
from platpay.kit.money import MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.kit.pagination import Page

# a card transaction is a transaction (TransactionOneOf): its schema lives in payments, below cards
from platpay.payments.card_schemas import CardMerchant as CardMerchant
from platpay.payments.card_schemas import CardTransaction as CardTransaction
from platpay.payments.card_schemas import CardTransactionStatus as CardTransactionStatus

MAX_AMOUNT = 9_000_000_000_000_000
CardState = TypeAliasType("CardState", Literal["PENDING_ISSUE", "ACTIVE", "FROZEN", "CLOSED"])
CardStateReason = TypeAliasType("CardStateReason", Literal["ISSUER_REJECTED", "CLOSED_BY_PLATFORM"])
CardBrand = TypeAliasType("CardBrand", Literal["VISA", "MASTERCARD"])
CardForm = TypeAliasType("CardForm", Literal["VIRTUAL"])
AccountIds = list[str]


class Card(ApiModel):
    id: str = Field(examples=["Card:019542f5-b3e7-1d02-0000-000000000010"])
    cardholder_id: str
    platform_card_id: str | None = None
    state: CardState
    state_reason: CardStateReason | None = None
    brand: CardBrand | None = None
    form: CardForm
    last4: str | None = None
    exp_month: int | None = Field(default=None, ge=1, le=12)
    exp_year: int | None = None
    pan_embed_url: str | None = Field(
        default=None,
        description="a page served by platpay showing the card number and CVV (sandbox); POST /cards/{id}/reveal "
        "mints a short-lived, single-use one",
    )
    funding_sources: list[str] = Field(description="internal account ids in decisioning priority order")
    max_spend_per_transaction: int | None = Field(
        ge=1,
        description="the largest amount one authorization may take, in minor units of the card's currency "
        "(exactly this amount is allowed); null: no limit. Always present (null included)",
    )
    currency: str | None = Field(default=None, description="the funding sources' currency")
    processor_ref: str | None = Field(default=None, description="the card processor's name of the card")
    issuer_ref: str | None = None
    created_at: datetime
    updated_at: datetime

    @model_serializer(mode="wrap")
    def _limit_even_when_null(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo):
        # The reference marks maxSpendPerTransaction required (nullable): a client generated from it needs the
        # key, so it survives the API's omission of null fields. (No return annotation: pydantic would
        # document the model's serialized form as that type.)
        data = handler(self)
        data.setdefault("maxSpendPerTransaction" if info.by_alias else "max_spend_per_transaction", None)
        return data


class CardListResponse(Page[Card]):
    pass


_ACCOUNT_IDS = Field(min_length=1, max_length=10, description="internal account ids, priority order")


_MAX_SPEND = Field(
    default=None,
    ge=1,
    le=MAX_AMOUNT,
    description="the largest amount one authorization may take, in minor units of the card's currency (exactly "
    "this amount is allowed)",
)


class CardCreateRequest(ApiRequest):
    cardholder_id: str = Field(min_length=1, max_length=64)
    platform_card_id: Annotated[str | None, NullRefused("to have one generated")] = Field(
        default=None, min_length=1, max_length=255
    )
    three_ds_password: str | None = Field(
        default=None,
        alias="threeDSecurePassword",
        min_length=8,
        max_length=64,
        pattern=r"^[!-~]+$",
        description="the card's static 3-D Secure password: 8 to 64 printable ASCII characters, no spaces. "
        "Write-only: kept sealed, never returned",
    )
    form: CardForm
    funding_sources: list[str] = _ACCOUNT_IDS
    max_spend_per_transaction: MinorUnits | None = _MAX_SPEND

    def fingerprinted(self, digest: Any) -> dict[str, Any]:
        """The body as the idempotency fingerprint takes it: the password as `digest(password)` (a keyed
        digest), never as sent (the fingerprint is an unkeyed hash that is stored)."""
        body = self.model_dump(mode="json", by_alias=True)
        if self.three_ds_password is not None:
            body["threeDSecurePassword"] = digest(self.three_ds_password)
        return body


CARD_CREATE_EXAMPLES = request_examples(
    virtualCard=(
        "Issue a virtual card with one funding source",
        {
            "cardholderId": ExampleIds.CUSTOMER,
            "platformCardId": "card-emp-aary-010",
            "form": "VIRTUAL",
            "fundingSources": [ExampleIds.INTERNAL_ACCOUNT],
        },
    ),
    limitedCard=(
        "Issue a card that authorizes at most $50.00 at a time, with its 3-D Secure password",
        {
            "cardholderId": ExampleIds.CUSTOMER,
            "platformCardId": "card-emp-aary-011",
            "form": "VIRTUAL",
            "fundingSources": [ExampleIds.INTERNAL_ACCOUNT],
            "maxSpendPerTransaction": 5000,
            "threeDSecurePassword": "AbCd1234EfGh5678",
        },
    ),
)


class CardUpdateRequest(ApiRequest):
    state: Annotated[Literal["ACTIVE", "FROZEN", "CLOSED"] | None, KEPT_WHEN_OMITTED] = None
    funding_sources: Annotated[list[str] | None, KEPT_WHEN_OMITTED] = Field(
        default=None, max_length=10, description="replaces the whole list (at least one)"
    )
    max_spend_per_transaction: MinorUnits | None = Field(
        default=None,
        ge=1,
        le=MAX_AMOUNT,
        description="omitted: unchanged; null: no limit; a positive integer: the new limit, in minor units of the "
        "card's currency. The card's current value is no change (no signature, no event)",
    )

    @property
    def max_spend_given(self) -> bool:
        return "max_spend_per_transaction" in self.model_fields_set


CARD_UPDATE_EXAMPLES = request_examples(
    freeze=("Freeze an active card", {"state": "FROZEN"}),
    unfreeze=("Unfreeze a frozen card", {"state": "ACTIVE"}),
    updateFundingSources=(
        "Replace the card's bound funding sources",
        {"fundingSources": [ExampleIds.INTERNAL_ACCOUNT]},
    ),
    setSpendingLimit=("Set the card's per-transaction spending limit", {"maxSpendPerTransaction": 10000}),
    clearSpendingLimit=("Remove the card's per-transaction spending limit", {"maxSpendPerTransaction": None}),
    close=("Permanently close the card", {"state": "CLOSED"}),
)


class CardRevealResponse(ApiModel):
    pan_embed_url: str = Field(
        description="a page showing the card's number, expiry and CVV; a bearer secret: it shows the page once, "
        "before expiresAt. Render it at once; never store or log it"
    )
    expires_at: datetime = Field(description="when the URL stops working (PLATPAY_CARD_REVEAL_SECONDS after)")


class SandboxCardSimulationResponse(ApiModel):
    """A simulation accepted: the card operation it causes arrives later (webhook, reads)."""

    issuer_transaction_token: str = Field(
        description="the issuer's token of the card transaction the simulated message opens or acts on (its "
        "issuerTransactionToken)"
    )


class CardTransactionListResponse(Page[CardTransaction]):
    pass


class CardCurrencyRef(ApiRequest):
    """A currency as a simulation names it: its code (the other Currency fields may be sent and are
    ignored)."""

    code: str = Field(min_length=1, max_length=8)
    name: str | None = None
    symbol: str | None = None
    decimals: int | None = None


class CardMerchantIn(ApiRequest):
    descriptor: str = Field(min_length=1, max_length=200)
    mcc: str | None = Field(default=None, max_length=4)
    country: str | None = Field(default=None, max_length=2)


class SandboxCardAuthorizationRequest(ApiRequest):
    amount: MinorUnits = Field(
        gt=0,
        le=MAX_AMOUNT,
        description="minor units of `currency`: the card's, or the fiat currency its stablecoin tracks (USD on a "
        "USDB card), converted one for one; any other declines CURRENCY_MISMATCH",
    )
    currency: CardCurrencyRef
    merchant: CardMerchantIn


AUTHORIZATION_EXAMPLES = request_examples(
    coffeeAuth=(
        "Approved $12.50 auth at a coffee shop",
        {
            "amount": 1250,
            "currency": {"code": "USD"},
            "merchant": {"descriptor": "BLUE BOTTLE COFFEE SF", "mcc": "5814", "country": "US"},
        },
    ),
    declinedInsufficientFunds=(
        "Declined: insufficient funds (descriptor suffix 002); the decline is recorded",
        {
            "amount": 50000,
            "currency": {"code": "USD"},
            "merchant": {"descriptor": "AMAZON RETAIL US-002", "mcc": "5942", "country": "US"},
        },
    ),
)


class SandboxCardClearingRequest(ApiRequest):
    card_transaction_id: str = Field(min_length=1, max_length=64)
    amount: MinorUnits = Field(
        ge=0,
        le=MAX_AMOUNT,
        description="minor units of the authorization's currency (its requestedAmount.currency); 0 expires it",
    )


CLEARING_EXAMPLES = request_examples(
    partialClearing=(
        "Clear part of the authorization",
        {"cardTransactionId": ExampleIds.CARD_TRANSACTION, "amount": 500},
    ),
    authorizationExpiry=(
        "Clearing of 0: the authorization expires",
        {"cardTransactionId": ExampleIds.CARD_TRANSACTION, "amount": 0},
    ),
)


class SandboxCardReturnRequest(ApiRequest):
    card_transaction_id: str = Field(min_length=1, max_length=64)
    amount: MinorUnits = Field(
        gt=0,
        le=MAX_AMOUNT,
        description="minor units of the authorization's currency (its requestedAmount.currency); at most what "
        "was settled less what was returned",
    )


RETURN_EXAMPLES = request_examples(
    partialReturn=(
        "A merchant returns part of a settled amount",
        {"cardTransactionId": ExampleIds.CARD_TRANSACTION, "amount": 100},
    )
)


class SandboxCardBalanceInquiryRequest(ApiRequest):
    merchant: CardMerchantIn


BALANCE_INQUIRY_EXAMPLES = request_examples(
    balanceInquiry=(
        "Balance inquiry at a fuel pump",
        {"merchant": {"descriptor": "SHELL OIL 12345678", "mcc": "5541", "country": "US"}},
    )
)


class SandboxCardAuthorizationAdviceRequest(ApiRequest):
    card_transaction_id: str = Field(min_length=1, max_length=64)
    amount: MinorUnits = Field(
        gt=0,
        le=MAX_AMOUNT,
        description="the authorization's new total, in minor units of its currency (its requestedAmount.currency)",
    )


AUTHORIZATION_ADVICE_EXAMPLES = request_examples(
    resizeUp=(
        "Re-size an open authorization up to a new total of $20.00",
        {"cardTransactionId": ExampleIds.CARD_TRANSACTION, "amount": 2000},
    )
)


class SandboxCardTransactionRefRequest(ApiRequest):
    card_transaction_id: str = Field(min_length=1, max_length=64)


RETURN_REVERSAL_EXAMPLES = request_examples(
    returnReversal=(
        "Reverse a settled return on a refunded transaction",
        {"cardTransactionId": ExampleIds.CARD_TRANSACTION},
    )
)


def _authorization_family_example(name: str, summary: str, amount: int, descriptor: str, mcc: str) -> Any:
    examples: dict[str, Any] = {
        name: (
            summary,
            {
                "amount": amount,
                "currency": {"code": "USD"},
                "merchant": {"descriptor": descriptor, "mcc": mcc, "country": "US"},
            },
        )
    }
    return request_examples(**examples)


CREDIT_AUTHORIZATION_EXAMPLES = _authorization_family_example(
    "creditAuth", "$25.00 credit authorization", 2500, "ACME MARKETPLACE", "5942"
)
CREDIT_AUTHORIZATION_ADVICE_EXAMPLES = _authorization_family_example(
    "creditAdvice", "$25.00 credit authorization advice", 2500, "ACME MARKETPLACE", "5942"
)
FINANCIAL_AUTHORIZATION_EXAMPLES = _authorization_family_example(
    "financialAuth", "$80.00 single-message ATM withdrawal", 8000, "ATM WITHDRAWAL 24TH ST", "6011"
)
FINANCIAL_CREDIT_AUTHORIZATION_EXAMPLES = _authorization_family_example(
    "financialCreditAuth", "$40.00 single-message push credit", 4000, "ACME PAYOUTS", "6012"
)
