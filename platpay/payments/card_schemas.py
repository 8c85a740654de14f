"""A card transaction as the API shows it. The cards domain owns card transactions; their schema lives
here, below cards, because a card transaction is one variant of the transaction union
(payments.schemas.TransactionOneOf, `type: CARD`) that GET /transactions answers."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from platpay.kit.api_model import ApiModel
from platpay.kit.money import CurrencyAmount
from platpay.kit.openapi import ExampleIds

CardTransactionStatus = TypeAliasType(
    "CardTransactionStatus",
    Literal["AUTHORIZED", "PARTIALLY_SETTLED", "SETTLED", "REFUNDED", "EXCEPTION", "DECLINED", "EXPIRED"],
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
    status: Literal["COMPLETED", "REVERSED"] = Field(description="REVERSED: a RETURN_REVERSAL undid it")
    created_at: datetime


class CardTransaction(ApiModel):
    """A card authorization and what followed it: the `CARD` variant of TransactionOneOf (GET /transactions
    lists it beside the others), and the payload of the CARD_TRANSACTION.* webhooks."""

    type: Literal["CARD"] = "CARD"
    id: str = Field(examples=[ExampleIds.CARD_TRANSACTION])
    card_id: str
    customer_id: str = Field(description="the cardholder")
    platform_customer_id: str = Field(description="the cardholder's platformCustomerId")
    issuer_transaction_token: str | None = None
    status: CardTransactionStatus
    direction: Literal["CREDIT", "DEBIT"] = Field(
        default="DEBIT",
        description="DEBIT: the card spends from its funding account; CREDIT: a credit authorization puts "
        "money on it",
    )
    decline_reason: str | None = Field(
        default=None, description="DECLINED only: INSUFFICIENT_FUNDS, CARD_PAUSED, CARD_CLOSED, …"
    )
    merchant: CardMerchant
    authorized_amount: CurrencyAmount = Field(
        description="in the card's currency: the request converted one for one (held when AUTHORIZED; nothing is "
        "held on a decline); 0 when the request's currency does not convert (CURRENCY_MISMATCH)"
    )
    requested_amount: CurrencyAmount = Field(
        description="what the network asked to authorize, in the currency it asked in (USD on a USDB card): the "
        "currency its clearings and returns are sent in too"
    )
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
