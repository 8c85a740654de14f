"""Customer request and response bodies. `customerType` selects which fields apply (SPEC §2)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Literal, cast

from pydantic import Field

from platpay.customers.types import CustomerDraft
from platpay.kit.api_model import ApiModel, ApiRequest

CustomerType = Literal["INDIVIDUAL", "BUSINESS"]
KycStatus = Literal["PENDING", "APPROVED", "REJECTED"]

EntityType = Literal[
    "SOLE_PROPRIETORSHIP", "PARTNERSHIP", "LLC", "CORPORATION", "S_CORPORATION", "NON_PROFIT", "OTHER"
]
BusinessType = Literal[
    "AGRICULTURE_FORESTRY_FISHING_AND_HUNTING",
    "MINING_QUARRYING_AND_OIL_AND_GAS_EXTRACTION",
    "UTILITIES",
    "CONSTRUCTION",
    "MANUFACTURING",
    "WHOLESALE_TRADE",
    "RETAIL_TRADE",
    "TRANSPORTATION_AND_WAREHOUSING",
    "INFORMATION",
    "FINANCE_AND_INSURANCE",
    "REAL_ESTATE_AND_RENTAL_AND_LEASING",
    "PROFESSIONAL_SCIENTIFIC_AND_TECHNICAL_SERVICES",
    "MANAGEMENT_OF_COMPANIES_AND_ENTERPRISES",
    "ADMINISTRATIVE_AND_SUPPORT_AND_WASTE_MANAGEMENT_AND_REMEDIATION_SERVICES",
    "EDUCATIONAL_SERVICES",
    "HEALTH_CARE_AND_SOCIAL_ASSISTANCE",
    "ARTS_ENTERTAINMENT_AND_RECREATION",
    "ACCOMMODATION_AND_FOOD_SERVICES",
    "OTHER_SERVICES",
    "PUBLIC_ADMINISTRATION",
]
PurposeOfAccount = Literal[
    "CONTRACTOR_PAYOUTS",
    "CREATOR_PAYOUTS",
    "EMPLOYEE_PAYOUTS",
    "MARKETPLACE_SELLER_PAYOUTS",
    "SUPPLIER_PAYMENTS",
    "CROSS_BORDER_B2B",
    "AR_AUTOMATION",
    "AP_AUTOMATION",
    "EMBEDDED_PAYMENTS",
    "PLATFORM_FEE_COLLECTION",
    "P2P_TRANSFERS",
    "CHARITABLE_DONATIONS",
    "OTHER",
]
TransactionCount = Literal[
    "COUNT_UNDER_10", "COUNT_10_TO_100", "COUNT_100_TO_500", "COUNT_500_TO_1000", "COUNT_OVER_1000"
]
TransactionVolume = Literal[
    "VOLUME_UNDER_10K", "VOLUME_10K_TO_100K", "VOLUME_100K_TO_1M", "VOLUME_1M_TO_10M", "VOLUME_OVER_10M"
]

Str200 = Annotated[str, Field(min_length=1, max_length=200)]
CountryCode = Annotated[str, Field(min_length=2, max_length=2, description="ISO 3166-1 alpha-2")]


class AddressIn(ApiRequest):
    line1: Str200
    line2: Str200 | None = None
    city: Str200 | None = None
    state: Str200 | None = None
    postal_code: str = Field(min_length=1, max_length=20)
    country: CountryCode


class Address(ApiModel):
    line1: str
    line2: str | None = None
    city: str | None = None
    state: str | None = None
    postal_code: str
    country: str


class BusinessInfoIn(ApiRequest):
    """On create legalName, taxId and incorporatedOn are required; on update every field is optional."""

    legal_name: Str200 | None = None
    tax_id: str | None = Field(default=None, min_length=1, max_length=64)
    incorporated_on: date | None = None
    registration_number: str | None = Field(default=None, min_length=1, max_length=64)
    doing_business_as: Str200 | None = None
    country: CountryCode | None = None
    source_of_funds: str | None = Field(default=None, min_length=1, max_length=500)
    countries_of_operation: list[CountryCode] | None = Field(default=None, max_length=250)
    expected_recipient_jurisdictions: list[CountryCode] | None = Field(default=None, max_length=250)
    entity_type: EntityType | None = None
    business_type: BusinessType | None = None
    purpose_of_account: PurposeOfAccount | None = None
    expected_monthly_transaction_count: TransactionCount | None = None
    expected_monthly_transaction_volume: TransactionVolume | None = None


class BusinessInfo(ApiModel):
    legal_name: str | None = None
    tax_id: str | None = None
    incorporated_on: date | None = None
    registration_number: str | None = None
    doing_business_as: str | None = None
    country: str | None = None
    source_of_funds: str | None = None
    countries_of_operation: list[str] | None = None
    expected_recipient_jurisdictions: list[str] | None = None
    entity_type: str | None = None
    business_type: str | None = None
    purpose_of_account: str | None = None
    expected_monthly_transaction_count: str | None = None
    expected_monthly_transaction_volume: str | None = None


class _CustomerFields(ApiRequest):
    platform_customer_id: str | None = Field(default=None, min_length=1, max_length=255)
    uma_address: str | None = Field(
        default=None, min_length=3, max_length=320, description="$username@umaDomain"
    )
    email: str | None = Field(default=None, min_length=3, max_length=254)
    currencies: list[str] | None = Field(
        default=None, min_length=1, max_length=50, description="currencies this customer will use"
    )
    address: AddressIn | None = None

    def draft(self) -> CustomerDraft:
        """The fields this body gave (nested ones too, a null as None), as the customer services take them."""
        return cast(CustomerDraft, self.model_dump(exclude_unset=True))


class CustomerCreate(_CustomerFields):
    """Create body. Individual fields (fullName, birthDate, nationality) apply to INDIVIDUAL customers;
    businessInfo to BUSINESS ones."""

    customer_type: CustomerType = Field(description="INDIVIDUAL or BUSINESS: selects the fields validated")
    region: CountryCode | None = Field(default=None, description="ISO 3166-1 alpha-2; immutable after create")
    full_name: Str200 | None = None
    birth_date: str | None = Field(default=None, max_length=10, description="YYYY-MM-DD, in the past")
    nationality: CountryCode | None = None
    business_info: BusinessInfoIn | None = None


class CustomerUpdate(_CustomerFields):
    """Partial update; `customerType` is required and must be the customer's type."""

    customer_type: CustomerType
    region: CountryCode | None = Field(default=None, description="immutable: set only on create")
    full_name: Str200 | None = None
    birth_date: str | None = Field(default=None, max_length=10)
    nationality: CountryCode | None = None
    business_info: BusinessInfoIn | None = None


class Customer(ApiModel):
    id: str = Field(examples=["Customer:019542f5-b3e7-1d02-0000-000000000001"])
    platform_customer_id: str
    customer_type: CustomerType
    uma_address: str
    kyc_status: KycStatus
    region: str | None = None
    currencies: list[str]
    email: str | None = None
    full_name: str | None = None
    birth_date: date | None = None
    nationality: str | None = None
    address: Address | None = None
    business_info: BusinessInfo | None = None
    is_deleted: bool
    created_at: datetime
    updated_at: datetime
