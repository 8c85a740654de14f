from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, model_validator

from platpay.kit.api_model import ApiModel, ApiRequest
from platpay.kit.money import CurrencyAmount, MinorUnits

TransactionStatus = Literal[
    "CREATED", "PENDING", "PROCESSING", "COMPLETED", "REJECTED", "FAILED", "REFUNDED", "EXPIRED"
]
TransactionType = Literal["INCOMING", "OUTGOING"]
MAX_AMOUNT = 9_000_000_000_000_000


class OutgoingTransactionFailureReason(StrEnum):
    """Why an OUTGOING transaction failed (the reference enum); the specific cause is in failureDetails."""

    QUOTE_EXPIRED = "QUOTE_EXPIRED"
    QUOTE_EXECUTION_FAILED = "QUOTE_EXECUTION_FAILED"
    LIGHTNING_PAYMENT_FAILED = "LIGHTNING_PAYMENT_FAILED"
    FUNDING_AMOUNT_MISMATCH = "FUNDING_AMOUNT_MISMATCH"
    COUNTERPARTY_POST_TX_FAILED = "COUNTERPARTY_POST_TX_FAILED"


class IncomingTransactionFailureReason(StrEnum):
    """Why an INCOMING transaction failed (the reference enum); the specific cause is in failureDetails."""

    LNURLP_FAILED = "LNURLP_FAILED"
    PAY_REQUEST_FAILED = "PAY_REQUEST_FAILED"
    PAYMENT_APPROVAL_WEBHOOK_ERROR = "PAYMENT_APPROVAL_WEBHOOK_ERROR"
    PAYMENT_APPROVAL_TIMED_OUT = "PAYMENT_APPROVAL_TIMED_OUT"
    OFFRAMP_FAILED = "OFFRAMP_FAILED"
    MISSING_MANDATORY_PAYEE_DATA = "MISSING_MANDATORY_PAYEE_DATA"
    QUOTE_EXPIRED = "QUOTE_EXPIRED"
    QUOTE_EXECUTION_FAILED = "QUOTE_EXECUTION_FAILED"


class Refund(ApiModel):
    reference: str
    initiated_at: datetime
    settled_at: datetime | None = None
    status: Literal["PENDING", "COMPLETED", "FAILED"]
    reason: Literal["TRANSACTION_FAILED", "USER_CANCELLATION", "TIMEOUT"] | None = None


class FailureDetails(ApiModel):
    """The specific cause behind a failureReason: what the rail answered (code, message), or for an incoming
    payment what the platform (or its webhook endpoint) answered at approval."""

    code: str | None = Field(
        default=None,
        description="the rail's cause (e.g. ACCOUNT_CLOSED), the code of a 403 or 422 webhook reply, or "
        "REJECTED_BY_PLATFORM",
    )
    message: str | None = Field(default=None, description="what went wrong, in words")
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
    fees: int | None = Field(
        default=None,
        ge=0,
        description="minor units: of the sending currency for OUTGOING (the quote's feesIncluded), of the "
        "receiving currency for INCOMING",
        examples=[80],
    )
    quote_id: str | None = None
    payment_instructions: list[dict[str, Any]] | None = None
    reconciliation_instructions: dict[str, Any] | None = None
    refund: Refund | None = None
    rate_details: dict[str, Any] | None = None
    counterparty_information: dict[str, Any] | None = None
    failure_reason: OutgoingTransactionFailureReason | IncomingTransactionFailureReason | None = Field(
        default=None,
        description="FAILED or EXPIRED only: OutgoingTransactionFailureReason for OUTGOING, "
        "IncomingTransactionFailureReason for INCOMING",
    )
    failure_details: FailureDetails | None = Field(
        default=None, description="the specific cause behind failureReason"
    )
    description: str | None = None
    agent_id: str | None = None
    settled_at: datetime | None = None
    receipt_delivery_confirmed_at: datetime | None = None
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="after")
    def _failure_reason_of_its_direction(self) -> Transaction:
        allowed = (
            OutgoingTransactionFailureReason if self.type == "OUTGOING" else IncomingTransactionFailureReason
        )
        if self.failure_reason is not None and self.failure_reason.value not in allowed.__members__:
            raise ValueError(f"{self.failure_reason.value} is not an {self.type} failureReason")
        return self


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
