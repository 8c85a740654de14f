"""Cards' request and response bodies, named as the reference names them (CardCreateRequest, Card, …);
ours beyond it (CardRefund, CardTransactionListResponse, CardCurrencyRef) are listed in
tests/data/openapi_additions.json."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from platpay.kit.api_model import KEPT_WHEN_OMITTED, ApiModel, ApiRequest, NullRefused
from platpay.kit.money import CurrencyAmount, MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.kit.pagination import Page

MAX_AMOUNT = 9_000_000_000_000_000
CardState = TypeAliasType("CardState", Literal["PENDING_ISSUE", "ACTIVE", "FROZEN", "CLOSED"])
CardStateReason = TypeAliasType("CardStateReason", Literal["ISSUER_REJECTED", "CLOSED_BY_PLATFORM"])
CardBrand = TypeAliasType("CardBrand", Literal["VISA", "MASTERCARD"])
CardForm = TypeAliasType("CardForm", Literal["VIRTUAL"])
CardTransactionStatus = TypeAliasType(
    "CardTransactionStatus",
    Literal["AUTHORIZED", "PARTIALLY_SETTLED", "SETTLED", "REFUNDED", "EXCEPTION", "DECLINED", "EXPIRED"],
)
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
        default=None, description="a page served by platpay showing the card number and CVV (sandbox)"
    )
    funding_sources: list[str] = Field(description="internal account ids in decisioning priority order")
    currency: str | None = Field(default=None, description="the funding sources' currency")
    issuer_ref: str | None = None
    created_at: datetime
    updated_at: datetime


class CardListResponse(Page[Card]):
    pass


_ACCOUNT_IDS = Field(min_length=1, max_length=10, description="internal account ids, priority order")


class CardCreateRequest(ApiRequest):
    cardholder_id: str = Field(min_length=1, max_length=64)
    platform_card_id: Annotated[str | None, NullRefused("to have one generated")] = Field(
        default=None, min_length=1, max_length=255
    )
    form: CardForm
    funding_sources: list[str] = _ACCOUNT_IDS


CARD_CREATE_EXAMPLES = request_examples(
    virtualCard=(
        "Issue a virtual card with one funding source",
        {
            "cardholderId": ExampleIds.CUSTOMER,
            "platformCardId": "card-emp-aary-010",
            "form": "VIRTUAL",
            "fundingSources": [ExampleIds.INTERNAL_ACCOUNT],
        },
    )
)


class CardUpdateRequest(ApiRequest):
    state: Annotated[Literal["ACTIVE", "FROZEN", "CLOSED"] | None, KEPT_WHEN_OMITTED] = None
    funding_sources: Annotated[list[str] | None, KEPT_WHEN_OMITTED] = Field(
        default=None, max_length=10, description="replaces the whole list (at least one)"
    )


CARD_UPDATE_EXAMPLES = request_examples(
    freeze=("Freeze an active card", {"state": "FROZEN"}),
    unfreeze=("Unfreeze a frozen card", {"state": "ACTIVE"}),
    updateFundingSources=(
        "Replace the card's bound funding sources",
        {"fundingSources": [ExampleIds.INTERNAL_ACCOUNT]},
    ),
    close=("Permanently close the card", {"state": "CLOSED"}),
)


class CardMerchant(ApiModel):
    descriptor: str = Field(min_length=1, max_length=200)
    mcc: str | None = Field(default=None, max_length=4)
    country: str | None = Field(default=None, max_length=2)


class CardPullSummary(ApiModel):
    count: int = Field(description="pulls made: the authorization's hold and each post-hoc pull")
    total_amount: int = Field(
        description="minor units the funding sources paid or still reserve: the hold less what it released "
        "(an expired authorization pulled nothing), plus the covered post-hoc pulls"
    )
    pending_count: int | None = Field(default=None, description="pulls whose confirmation is still awaited")


class CardRefundSummary(ApiModel):
    count: int
    total_amount: int


class CardSettlementSummary(ApiModel):
    count: int
    total_amount: int


class CardRefund(ApiModel):
    """A merchant RETURN credited back to the funding source (SPEC §2; the reference shows only the
    parent's refundSummary)."""

    id: str = Field(examples=["CardRefund:019542f5-b3e7-1d02-0000-000000000200"])
    card_transaction_id: str
    account_id: str
    amount: CurrencyAmount
    status: Literal["COMPLETED"]
    created_at: datetime


class CardTransaction(ApiModel):
    id: str = Field(examples=[ExampleIds.CARD_TRANSACTION])
    card_id: str
    issuer_transaction_token: str | None = None
    status: CardTransactionStatus
    decline_reason: str | None = Field(
        default=None, description="DECLINED only: INSUFFICIENT_FUNDS, CARD_PAUSED, CARD_CLOSED, …"
    )
    merchant: CardMerchant
    authorized_amount: CurrencyAmount
    settled_amount: CurrencyAmount | None = None
    refunded_amount: CurrencyAmount | None = None
    account_id: str | None = Field(default=None, description="the funding source used (none if declined)")
    pull_summary: CardPullSummary
    refund_summary: CardRefundSummary
    settlement_summary: CardSettlementSummary
    refunds: list[CardRefund] = Field(default_factory=list, description="the CardRefunds, oldest first")
    authorized_at: datetime
    last_event_at: datetime | None = None
    created_at: datetime
    updated_at: datetime


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
    amount: MinorUnits = Field(gt=0, le=MAX_AMOUNT)
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
    amount: MinorUnits = Field(ge=0, le=MAX_AMOUNT)


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
    amount: MinorUnits = Field(gt=0, le=MAX_AMOUNT)


RETURN_EXAMPLES = request_examples(
    partialReturn=(
        "A merchant returns part of a settled amount",
        {"cardTransactionId": ExampleIds.CARD_TRANSACTION, "amount": 100},
    )
)
