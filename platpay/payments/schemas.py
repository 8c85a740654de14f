from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from platpay.kit.api_model import ApiModel, ApiRequest, JsonDatetime, NullRefused
from platpay.kit.money import CurrencyAmount, MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.kit.pagination import Page
from platpay.payments.card_schemas import CardTransaction

# The reference's enumeration (its filter and its answers); platpay's flows set only payments/state.py's
# values. PENDING_AUTHORIZATION belongs to strong customer authentication, outside SPEC's scope: a filter
# for it is accepted and matches nothing.
TransactionStatus = TypeAliasType(
    "TransactionStatus",
    Literal[
        "CREATED",
        "PENDING",
        "PENDING_AUTHORIZATION",
        "PROCESSING",
        "COMPLETED",
        "REJECTED",
        "FAILED",
        "REFUNDED",
        "EXPIRED",
    ],
)
TransactionType = TypeAliasType("TransactionType", Literal["INCOMING", "OUTGOING"])
TransactionDirection = TypeAliasType("TransactionDirection", Literal["CREDIT", "DEBIT"])
TransactionPendingReason = TypeAliasType(
    "TransactionPendingReason",
    Literal[
        "COUNTERPARTY_DECLARATION_REQUIRED",
        "WALLET_VERIFICATION_REQUIRED",
        "COUNTERPARTY_INFORMATION_REQUIRED",
        "COMPLIANCE_REVIEW",
    ],
)
PAYMENT_RAILS = (
    "ACH",
    "ACH_COLOMBIA",
    "BANK_TRANSFER",
    "BRE_B",
    "CIPS",
    "FAST",
    "FASTER_PAYMENTS",
    "FEDNOW",
    "INSTAPAY",
    "MOBILE_MONEY",
    "NEFT",
    "PAYNOW",
    "PESONET",
    "PIX",
    "RTGS",
    "RTP",
    "SEPA",
    "SEPA_INSTANT",
    "SPEI",
    "SWIFT",
    "UNIONPAY",
    "UPI",
    "WIRE",
)
PaymentRail = TypeAliasType("PaymentRail", Literal[PAYMENT_RAILS])  # type: ignore[valid-type]
RailSelectionMode = TypeAliasType("RailSelectionMode", Literal["AUTO", "MANUAL"])
PurposeOfPayment = TypeAliasType(
    "PurposeOfPayment",
    Literal[
        "GIFT",
        "SELF",
        "GOODS_OR_SERVICES",
        "EDUCATION",
        "HEALTH_OR_MEDICAL",
        "REAL_ESTATE_PURCHASE",
        "TAX_PAYMENT",
        "LOAN_PAYMENT",
        "UTILITY_BILL",
        "DONATION",
        "TRAVEL",
        "FAMILY_SUPPORT",
        "SALARY_PAYMENT",
        "OTHER",
    ],
)
REMITTANCE_INFORMATION_MAX = 80
MAX_AMOUNT = 9_000_000_000_000_000
# What leaving out a transfer's `amount` or an account's `paymentRail` means: a null must not mean it.
WHOLE_BALANCE = NullRefused("to send the whole available balance")
DEFAULT_RAIL = NullRefused("to use the account's first payment rail")


class OutgoingTransactionFailureReason(StrEnum):
    """Why an OUTGOING transaction failed (the reference enum); the specific cause is in failureDetails."""

    QUOTE_EXPIRED = "QUOTE_EXPIRED"
    QUOTE_RATE_UNAVAILABLE = "QUOTE_RATE_UNAVAILABLE"
    QUOTE_EXECUTION_FAILED = "QUOTE_EXECUTION_FAILED"
    FUNDING_AMOUNT_MISMATCH = "FUNDING_AMOUNT_MISMATCH"
    PAYOUT_RETURNED = "PAYOUT_RETURNED"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    ACCOUNT_CANNOT_RECEIVE = "ACCOUNT_CANNOT_RECEIVE"
    ACCOUNT_INVALID = "ACCOUNT_INVALID"
    COMPLIANCE_REJECTED = "COMPLIANCE_REJECTED"
    LIGHTNING_PAYMENT_FAILED = "LIGHTNING_PAYMENT_FAILED"
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
    COMPLIANCE_REJECTED = "COMPLIANCE_REJECTED"
    COLLECTION_FAILED = "COLLECTION_FAILED"


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
    """What every transaction carries; `type` says which of IncomingTransaction and OutgoingTransaction it
    is (TransactionOneOf, where a CardTransaction is the third), and that one adds its own fields."""

    id: str = Field(examples=["Transaction:019542f5-b3e7-1d02-0000-000000000004"])
    status: TransactionStatus
    pending_reason: TransactionPendingReason | None = Field(
        default=None, description="why a PENDING transaction waits, when someone must act"
    )
    type: TransactionType
    direction: TransactionDirection = Field(
        description="what it does to the customer's (or the platform's) internal account: CREDIT funds in, "
        "DEBIT funds out; OUTGOING is DEBIT, INCOMING normally CREDIT"
    )
    source: dict[str, Any] | None = None
    destination: dict[str, Any]
    customer_id: str = Field(
        description="sender for OUTGOING, recipient for INCOMING; the platform's id for its own"
    )
    platform_customer_id: str
    sent_amount: CurrencyAmount | None = Field(default=None, description="in the sender's currency")
    received_amount: CurrencyAmount | None = None
    exchange_rate: float | None = Field(
        default=None, gt=0, description="receiving units per sending unit (the quote's exchangeRate)"
    )
    fees: int | None = Field(
        default=None,
        ge=0,
        description="minor units: of the sending currency for OUTGOING (the quote's feesIncluded), of the "
        "receiving currency for INCOMING",
        examples=[80],
    )
    quote_id: str | None = Field(
        default=None, description="the quote it pays (OUTGOING) or that paid it (INCOMING between customers)"
    )
    refund: Refund | None = None
    reconciliation_instructions: dict[str, Any] | None = None
    counterparty_information: dict[str, Any] | None = None
    failure_details: FailureDetails | None = Field(
        default=None, description="the specific cause behind failureReason (a cancellation: code CANCELLED)"
    )
    description: str | None = None
    agent_id: str | None = None
    settled_at: datetime | None = None
    receipt_delivery_confirmed_at: datetime | None = None
    created_at: datetime
    updated_at: datetime


class IncomingTransaction(Transaction):
    """Money received: into a customer's (or the platform's) internal account."""

    type: Literal["INCOMING"]
    failure_reason: IncomingTransactionFailureReason | None = Field(
        default=None, description="FAILED or EXPIRED only"
    )


class OutgoingTransaction(Transaction):
    """Money sent: a transfer out, a quote's payment."""

    type: Literal["OUTGOING"]
    payment_instructions: list[dict[str, Any]] | None = None
    rate_details: dict[str, Any] | None = None
    platform_fees: int | None = Field(
        default=None,
        ge=0,
        description="the platform-collected part of `fees` (PlatformConfig.feeConfigs or the quote's "
        "platformFeeOverride), minor units of the sending currency; 0 without an applicable fee",
        examples=[5],
    )
    failure_reason: OutgoingTransactionFailureReason | None = Field(
        default=None, description="FAILED or EXPIRED only"
    )
    payment_rail: PaymentRail | None = Field(
        default=None, description="the bank rail settling it; absent when no external rail is used"
    )
    rail_selection_mode: RailSelectionMode | None = Field(
        default=None, description="MANUAL: the request named the paymentRail; AUTO: platpay chose it"
    )
    expected_settlement_at: datetime | None = Field(
        default=None, description="when the rail is expected to settle it; absent until known"
    )
    settlement_timeline_seconds: int | None = Field(
        default=None, ge=0, description="expected seconds from creation to settlement"
    )
    remittance_information: str | None = Field(
        default=None, description="what travels with the payment to the recipient, as the request gave it"
    )
    purpose_of_payment: PurposeOfPayment | None = None


TransactionOneOf = TypeAliasType(
    "TransactionOneOf",
    Annotated[IncomingTransaction | OutgoingTransaction | CardTransaction, Field(discriminator="type")],
)
"""A transaction of either direction, or a card transaction, as GET /transactions/{transactionId} answers it."""

AnyTransaction = Transaction | CardTransaction
"""What a service returns where a card transaction is a transaction too (GET /transactions, by id)."""


class TransactionListResponse(Page[TransactionOneOf]):
    """GET /transactions. No totalCount (optional in the reference): counting a tenant's every transaction
    and card transaction on each page cost more than the page itself (bench/transactions_list.py)."""

    totalCount: int | None = Field(  # type: ignore[assignment]
        default=None, description="not sent: counting every transaction on each page is not worth its cost"
    )


class CancelTransactionRequest(ApiRequest):
    """POST /transactions/{transactionId}/cancel."""

    reason: str | None = Field(
        default=None, min_length=1, max_length=255, description="kept with the transaction (failureDetails)"
    )


class _AccountReference(ApiRequest):
    account_id: str = Field(min_length=1, max_length=64)


class InternalAccountReference(_AccountReference):
    """An internal account, by id."""


class ExternalAccountReference(_AccountReference):
    """An external account, by id."""


class ExternalAccountDestinationReference(ApiRequest):
    """An external account, by id, and optionally the rail to pay it over."""

    account_id: str = Field(min_length=1, max_length=64)
    payment_rail: Annotated[str | None, DEFAULT_RAIL] = Field(
        default=None, min_length=1, max_length=24, description="one of the account's paymentRails"
    )


class TransferInRequest(ApiRequest):
    source: ExternalAccountReference = Field(description="an external account that supports pull (ACH debit)")
    destination: InternalAccountReference = Field(
        description="the same customer's internal account in the same currency"
    )
    amount: MinorUnits = Field(gt=0, le=MAX_AMOUNT, description="minor units")
    description: str | None = Field(default=None, max_length=500)


class TransferOutRequest(ApiRequest):
    source: InternalAccountReference = Field(description="an internal account")
    destination: ExternalAccountDestinationReference = Field(
        description="the same customer's external account in the same currency"
    )
    amount: Annotated[MinorUnits | None, WHOLE_BALANCE] = Field(
        default=None, gt=0, le=MAX_AMOUNT, description="minor units; omitted: the whole available balance"
    )
    description: str | None = Field(default=None, max_length=500)
    remittance_information: str | None = Field(
        default=None,
        min_length=1,
        max_length=REMITTANCE_INFORMATION_MAX,
        description="travels with the payment to the recipient (ACH addenda, wire OBI)",
    )
    purpose_of_payment: PurposeOfPayment | None = None


class ConfirmReceiptDeliveryRequest(ApiRequest):
    receipt_delivery_confirmed_at: Annotated[
        JsonDatetime | None, NullRefused("to record the time of this request")
    ] = Field(default=None, description="defaults to now; a repeat overwrites")


class SandboxFundRequest(ApiRequest):
    amount: MinorUnits = Field(gt=0, le=100_000_000_000, description="minor units to deposit")


TRANSFER_OUT_EXAMPLES = request_examples(
    transferOut=(
        "Pay $125.50 out to the customer's own bank account",
        {
            "source": {"accountId": ExampleIds.INTERNAL_ACCOUNT},
            "destination": {"accountId": ExampleIds.EXTERNAL_ACCOUNT, "paymentRail": "ACH"},
            "amount": 12550,
        },
    )
)
TRANSFER_IN_EXAMPLES = request_examples(
    transferIn=(
        "Pull $125.50 from the customer's bank account (ACH debit)",
        {
            "source": {"accountId": ExampleIds.EXTERNAL_ACCOUNT},
            "destination": {"accountId": ExampleIds.INTERNAL_ACCOUNT},
            "amount": 12550,
        },
    )
)
CANCEL_TRANSACTION_EXAMPLES = request_examples(
    cancelTransfer=("Cancel a bank transfer that has not settled yet", {"reason": "REQUESTED_AFTER_HOURS"})
)
CONFIRM_RECEIPT_EXAMPLES = request_examples(
    confirmReceipt=(
        "The receipt reached the recipient",
        {"receiptDeliveryConfirmedAt": "2025-10-13T12:00:00Z"},
    )
)
SANDBOX_FUND_EXAMPLES = request_examples(
    fundUsdAccount=("Fund a USD account with $1,000", {"amount": 100000})
)
