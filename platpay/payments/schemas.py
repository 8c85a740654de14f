from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from platpay.kit.api_model import ApiModel, ApiRequest
from platpay.kit.money import CurrencyAmount, MinorUnits

TransactionStatus = Literal[
    "CREATED", "PENDING", "PROCESSING", "COMPLETED", "REJECTED", "FAILED", "REFUNDED", "EXPIRED"
]
TransactionType = Literal["INCOMING", "OUTGOING"]
MAX_AMOUNT = 9_000_000_000_000_000


class Refund(ApiModel):
    reference: str
    initiated_at: datetime
    settled_at: datetime | None = None
    status: Literal["PENDING", "COMPLETED", "FAILED"]
    reason: Literal["TRANSACTION_FAILED", "USER_CANCELLATION", "TIMEOUT"] | None = None


class IncomingFailureDetails(ApiModel):
    """Why an incoming payment failed at approval, as the platform (or its webhook endpoint) answered."""

    code: str | None = Field(default=None, description="the code of a 403 or 422 webhook reply")
    message: str | None = Field(default=None, description="the message of a 403 or 422 webhook reply")
    reason: str | None = Field(
        default=None, description="the reason given by a 403 webhook reply or POST /transactions/{id}/reject"
    )
    required_fields: list[str] | None = Field(
        default=None, description="CustomerInfoFieldNames a 422 webhook reply asked the sender for"
    )
    missing_fields: list[str] | None = Field(
        default=None,
        description="mandatory requestedReceiverCustomerInfoFields a 200 approval did not supply",
    )
    response_status: int | None = Field(
        default=None, description="the unexpected HTTP status the webhook endpoint answered"
    )
    error: str | None = Field(default=None, description="why the webhook could not be delivered")


class Transaction(ApiModel):
    """OUTGOING or INCOMING (the `type` is the direction); fields beyond the common ones depend on it."""

    id: str = Field(examples=["Transaction:019542f5-b3e7-1d02-0000-000000000004"])
    status: TransactionStatus
    type: TransactionType
    source: dict[str, Any] | None = None
    destination: dict[str, Any]
    customer_id: str = Field(
        description="sender for OUTGOING, recipient for INCOMING; the platform's id for its own"
    )
    platform_customer_id: str
    sent_amount: CurrencyAmount | None = None
    received_amount: CurrencyAmount | None = None
    exchange_rate: float | None = Field(
        default=None, description="receiving units per sending unit (the quote's exchangeRate)"
    )
    fees: CurrencyAmount | None = None
    quote_id: str | None = None
    payment_instructions: list[dict[str, Any]] | None = None
    reconciliation_instructions: dict[str, Any] | None = None
    refund: Refund | None = None
    rate_details: dict[str, Any] | None = None
    counterparty_information: dict[str, Any] | None = None
    failure_reason: str | None = None
    failure_details: IncomingFailureDetails | None = Field(
        default=None, description="INCOMING only: what the platform answered when it rejected or failed it"
    )
    description: str | None = None
    agent_id: str | None = None
    settled_at: datetime | None = None
    receipt_delivery_confirmed_at: datetime | None = None
    created_at: datetime
    updated_at: datetime


class AccountRef(ApiRequest):
    account_id: str = Field(min_length=1, max_length=64)


class DestinationAccountRef(ApiRequest):
    account_id: str = Field(min_length=1, max_length=64)
    payment_rail: str | None = Field(
        default=None, min_length=1, max_length=24, description="one of the account's paymentRails"
    )


class TransferIn(ApiRequest):
    source: AccountRef = Field(description="an external account that supports pull (ACH debit)")
    destination: AccountRef = Field(description="the same customer's internal account in the same currency")
    amount: MinorUnits = Field(gt=0, le=MAX_AMOUNT, description="minor units")
    description: str | None = Field(default=None, max_length=500)


class TransferOut(ApiRequest):
    source: AccountRef = Field(description="an internal account")
    destination: DestinationAccountRef = Field(
        description="the same customer's external account in the same currency"
    )
    amount: MinorUnits | None = Field(
        default=None, gt=0, le=MAX_AMOUNT, description="minor units; omitted: the whole available balance"
    )
    description: str | None = Field(default=None, max_length=500)


class ConfirmReceipt(ApiRequest):
    receipt_delivery_confirmed_at: datetime | None = Field(
        default=None, description="defaults to now; a repeat overwrites"
    )


class FundAccount(ApiRequest):
    amount: MinorUnits = Field(gt=0, le=100_000_000_000, description="minor units to deposit")
