from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from platpay.kit.api_model import ApiModel, ApiRequest, NullRefused
from platpay.kit.money import CurrencyAmount
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.kit.pagination import Page

InternalAccountType = TypeAliasType(
    "InternalAccountType", Literal["INTERNAL_FIAT", "INTERNAL_CRYPTO", "EMBEDDED_WALLET"]
)
InternalAccountStatus = TypeAliasType(
    "InternalAccountStatus", Literal["PENDING", "ACTIVE", "CLOSED", "FROZEN", "FAILED"]
)
ExternalAccountStatus = TypeAliasType(
    "ExternalAccountStatus",
    Literal["PENDING", "ACTIVE", "PENDING_OWNERSHIP_VERIFICATION", "UNVERIFIED", "UNDER_REVIEW", "INACTIVE"],
)
OwnershipType = TypeAliasType("OwnershipType", Literal["FIRST_PARTY", "THIRD_PARTY"])
BeneficiaryVerificationStatus = TypeAliasType(
    "BeneficiaryVerificationStatus",
    Literal["MATCHED", "PARTIAL_MATCH", "NOT_MATCHED", "UNSUPPORTED", "CHECKED_BY_RECEIVING_FI", "PENDING"],
)


class PaymentInstructions(ApiModel):
    account_or_wallet_info: dict[str, Any] = Field(description="where and how to send money in")
    instructions_notes: str | None = None
    is_platform_account: bool | None = None


class InternalAccount(ApiModel):
    id: str = Field(examples=["InternalAccount:019542f5-b3e7-1d02-0000-000000000002"])
    customer_id: str | None = Field(default=None, description="absent for the platform's own accounts")
    type: InternalAccountType
    status: InternalAccountStatus
    balance: CurrencyAmount = Field(description="available: excludes held funds")
    total_balance: CurrencyAmount = Field(description="includes held funds")
    funding_payment_instructions: list[PaymentInstructions]
    private_enabled: bool | None = None
    created_at: datetime
    updated_at: datetime


class InternalAccountListResponse(Page[InternalAccount]):
    """GET /customers/internal-accounts."""


class PlatformInternalAccountListResponse(ApiModel):
    """GET /platform/internal-accounts (not paginated)."""

    data: list[InternalAccount]


class InternalAccountEntry(ApiModel):
    """One ledger movement of an internal account: a journal entry as that account saw it."""

    id: str = Field(
        description="the journal entry's id", examples=["JournalEntry:019542f5-b3e7-1d02-0000-000000000300"]
    )
    kind: str = Field(
        description="what moved the money, e.g. SANDBOX_FUNDING, TRANSFER_OUT_HOLD, TRANSFER_OUT_SETTLE, "
        "CARD_AUTHORIZATION_HOLD, CARD_CLEARING_CAPTURE, CARD_RETURN (every value: README, Internal accounts)",
        examples=["CARD_AUTHORIZATION_HOLD"],
    )
    available_change: CurrencyAmount = Field(
        description="signed: + money became spendable, − it left or was held"
    )
    held_change: CurrencyAmount = Field(description="signed: + money was reserved, − a reservation ended")
    total_change: CurrencyAmount = Field(
        description="availableChange + heldChange: 0 when money was only held"
    )
    available_after: CurrencyAmount = Field(
        description="the account's balance once this entry and every earlier one are counted"
    )
    total_after: CurrencyAmount = Field(
        description="the account's totalBalance once this entry and every earlier one are counted"
    )
    transaction_id: str | None = Field(
        default=None, description="the Transaction (GET /transactions/{transactionId}) the entry belongs to"
    )
    card_transaction_id: str | None = Field(
        default=None,
        description="the CardTransaction (GET /card-transactions/{cardTransactionId}) the entry belongs to",
    )
    reference: str | None = Field(
        default=None, description="the business object the entry belongs to, as the ledger records it"
    )
    created_at: datetime


class InternalAccountEntryListResponse(Page[InternalAccountEntry]):
    """GET /internal-accounts/{id}/entries."""


class BeneficiaryVerifiedData(ApiModel):
    full_name: str


class ExternalAccount(ApiModel):
    id: str = Field(examples=["ExternalAccount:019542f5-b3e7-1d02-0000-000000000003"])
    customer_id: str | None = Field(default=None, description="absent for the platform's own accounts")
    status: ExternalAccountStatus
    platform_account_id: str | None = None
    ownership_type: OwnershipType | None = Field(
        default=None, description="whose account it is, as registered (absent when the client did not say)"
    )
    currency: str
    default_uma_deposit_account: bool
    beneficiary_verification_status: BeneficiaryVerificationStatus | None = None
    beneficiary_verified_data: BeneficiaryVerifiedData | None = None
    account_info: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class ExternalAccountListResponse(Page[ExternalAccount]):
    """GET /customers/external-accounts and GET /platform/external-accounts."""


_OWNERSHIP = (
    "FIRST_PARTY: the customer's own account (the platform's, for a platform account); THIRD_PARTY: someone "
    "else's. Stored and returned; a FIRST_PARTY self-custody wallet may need ownership verification"
)


class ExternalAccountCreateRequest(ApiRequest):
    customer_id: Annotated[str | None, NullRefused("to register the platform's own account")] = Field(
        default=None, max_length=64, description="absent: the platform's own account"
    )
    currency: str = Field(min_length=1, max_length=8)
    platform_account_id: str | None = Field(default=None, min_length=1, max_length=255)
    ownership_type: OwnershipType | None = Field(default=None, description=_OWNERSHIP)
    default_uma_deposit_account: bool = False
    account_info: dict[str, Any] = Field(description="by accountType, see the corridor table")


class PlatformExternalAccountCreateRequest(ApiRequest):
    currency: str = Field(min_length=1, max_length=8)
    platform_account_id: str | None = Field(default=None, min_length=1, max_length=255)
    ownership_type: OwnershipType | None = Field(default=None, description=_OWNERSHIP)
    account_info: dict[str, Any] = Field(description="by accountType, see the corridor table")


class DiscoveryListResponseDataItem(ApiModel):
    bank_name: str = Field(description="the value to send as accountInfo.bankName")
    display_name: str
    country: str
    currency: str


class DiscoveryListResponse(ApiModel):
    data: list[DiscoveryListResponseDataItem]


_US_BANK_ACCOUNT = {
    "accountType": "USD_ACCOUNT",
    "accountNumber": "12345678901",
    "routingNumber": "011000015",
    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe", "birthDate": "1990-01-15"},
}
EXTERNAL_ACCOUNT_EXAMPLES = request_examples(
    usBankAccount=(
        "A customer's US bank account",
        {"customerId": ExampleIds.CUSTOMER, "currency": "USD", "accountInfo": _US_BANK_ACCOUNT},
    ),
    indianBankAccount=(
        "A customer's own Indian bank account, paid over NEFT",
        {
            "customerId": ExampleIds.CUSTOMER,
            "currency": "INR",
            "ownershipType": "FIRST_PARTY",
            "accountInfo": {
                "accountType": "INR_ACCOUNT",
                "accountNumber": "000111222333",
                "ifsc": "HDFC0001234",
                "rail": "NEFT",
                "bankName": "HDFC Bank",
                "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Asha Rao"},
            },
        },
    ),
    sparkWallet=(
        "A customer's Spark wallet",
        {
            "customerId": ExampleIds.CUSTOMER,
            "currency": "BTC",
            "accountInfo": {
                "accountType": "SPARK_WALLET",
                "address": "spark1pgssypc8qurswpc8qurswpc8qurswpc8qurswpc8qurswpc8qurswpc8ztcgyt",
            },
        },
    ),
)
PLATFORM_EXTERNAL_ACCOUNT_EXAMPLES = request_examples(
    usBankAccount=(
        "The platform's own US bank account",
        {
            "currency": "USD",
            "platformAccountId": "operating-usd",
            "accountInfo": {
                **_US_BANK_ACCOUNT,
                "beneficiary": {"beneficiaryType": "BUSINESS", "legalName": "Acme Corp"},
            },
        },
    )
)
