from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from platpay.kit.api_model import ApiModel, ApiRequest
from platpay.kit.money import CurrencyAmount

InternalAccountType = Literal["INTERNAL_FIAT", "INTERNAL_CRYPTO", "EMBEDDED_WALLET"]
InternalAccountStatus = Literal["PENDING", "ACTIVE", "CLOSED", "FROZEN"]
ExternalAccountStatus = Literal["PENDING", "ACTIVE", "UNDER_REVIEW", "INACTIVE"]
BeneficiaryVerificationStatus = Literal[
    "MATCHED", "PARTIAL_MATCH", "NOT_MATCHED", "UNSUPPORTED", "CHECKED_BY_RECEIVING_FI", "PENDING"
]


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


class InternalAccountList(ApiModel):
    data: list[InternalAccount]


class BeneficiaryVerifiedData(ApiModel):
    full_name: str


class ExternalAccount(ApiModel):
    id: str = Field(examples=["ExternalAccount:019542f5-b3e7-1d02-0000-000000000003"])
    customer_id: str | None = Field(default=None, description="absent for the platform's own accounts")
    status: ExternalAccountStatus
    platform_account_id: str | None = None
    currency: str
    default_uma_deposit_account: bool
    beneficiary_verification_status: BeneficiaryVerificationStatus | None = None
    beneficiary_verified_data: BeneficiaryVerifiedData | None = None
    account_info: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class ExternalAccountCreate(ApiRequest):
    customer_id: str | None = Field(
        default=None, max_length=64, description="absent: the platform's own account"
    )
    currency: str = Field(min_length=1, max_length=8)
    platform_account_id: str | None = Field(default=None, min_length=1, max_length=255)
    default_uma_deposit_account: bool = False
    account_info: dict[str, Any] = Field(description="by accountType, see the corridor table")


class PlatformExternalAccountCreate(ApiRequest):
    currency: str = Field(min_length=1, max_length=8)
    platform_account_id: str | None = Field(default=None, min_length=1, max_length=255)
    account_info: dict[str, Any] = Field(description="by accountType, see the corridor table")


class Discovery(ApiModel):
    bank_name: str = Field(description="the value to send as accountInfo.bankName")
    display_name: str
    country: str
    currency: str


class DiscoveryList(ApiModel):
    data: list[Discovery]
