"""Customer request and response bodies. `customerType` selects which fields apply (SPEC §2)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, Field, GetJsonSchemaHandler, TypeAdapter
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema
from typing_extensions import TypeAliasType

from platpay.customers.contact.schemas import ContactVerification
from platpay.customers.types import CustomerDraft
from platpay.kit.api_model import ApiModel, ApiRequest, AwareJsonDatetime, JsonDate, NullRefused
from platpay.kit.openapi import request_examples
from platpay.kit.pagination import Page

CustomerType = TypeAliasType("CustomerType", Literal["INDIVIDUAL", "BUSINESS"])
KycStatus = TypeAliasType("KycStatus", Literal["UNVERIFIED", "PENDING", "APPROVED", "REJECTED", "HOLD"])
KybStatus = TypeAliasType("KybStatus", Literal["UNVERIFIED", "PENDING", "APPROVED", "REJECTED", "HOLD"])

EntityType = TypeAliasType(
    "EntityType",
    Literal[
        "SOLE_PROPRIETORSHIP",
        "PARTNERSHIP",
        "LLC",
        "CORPORATION",
        "S_CORPORATION",
        "NON_PROFIT",
        "PUBLICLY_LISTED_COMPANY",
        "TRUST",
        "PRIVATE_FOUNDATION",
        "CHARITY",
        "OTHER",
    ],
)
BusinessType = TypeAliasType(
    "BusinessType",
    Literal[
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
    ],
)
PurposeOfAccount = TypeAliasType(
    "PurposeOfAccount",
    Literal[
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
    ],
)
TransactionCount = Literal[
    "COUNT_UNDER_10", "COUNT_10_TO_100", "COUNT_100_TO_500", "COUNT_500_TO_1000", "COUNT_OVER_1000"
]
TransactionVolume = Literal[
    "VOLUME_UNDER_10K", "VOLUME_10K_TO_100K", "VOLUME_100K_TO_1M", "VOLUME_1M_TO_10M", "VOLUME_OVER_10M"
]
# An individual's enhanced-due-diligence answers (the reference's CustomerEdd) name these.
ExpectedMonthlyTransactionCount = TypeAliasType("ExpectedMonthlyTransactionCount", TransactionCount)
ExpectedMonthlyTransactionVolume = TypeAliasType("ExpectedMonthlyTransactionVolume", TransactionVolume)
IndividualSourceOfFundsCategory = TypeAliasType(
    "IndividualSourceOfFundsCategory",
    Literal[
        "SALARY",
        "SELF_EMPLOYMENT_INCOME",
        "INVESTMENT_INCOME",
        "PENSION",
        "RENTAL_INCOME",
        "GIFT",
        "INHERITANCE",
        "LOAN",
        "SAVINGS",
        "SALE_OF_ASSETS",
        "OTHER",
    ],
)
SourceOfWealthCategory = TypeAliasType(
    "SourceOfWealthCategory",
    Literal[
        "SALARY",
        "BUSINESS_INCOME",
        "INVESTMENTS",
        "INHERITANCE",
        "PROPERTY_SALE",
        "GIFT",
        "RETIREMENT",
        "SAVINGS",
        "OTHER",
    ],
)
AnnualIncomeRange = TypeAliasType(
    "AnnualIncomeRange",
    Literal["UNDER_50K", "RANGE_50K_100K", "RANGE_100K_250K", "RANGE_250K_1M", "OVER_1M"],
)
NetWorthRange = TypeAliasType(
    "NetWorthRange",
    Literal["UNDER_100K", "RANGE_100K_500K", "RANGE_500K_1M", "RANGE_1M_5M", "RANGE_5M_25M", "OVER_25M"],
)
PepStatus = TypeAliasType("PepStatus", Literal["NONE", "DOMESTIC", "FOREIGN", "HIO", "FAMILY_OR_ASSOCIATE"])
SourceOfFundsCategory = TypeAliasType(
    "SourceOfFundsCategory",
    Literal[
        "OPERATING_REVENUE",
        "INVESTMENT_INCOME",
        "LOANS",
        "VENTURE_CAPITAL",
        "PERSONAL_SAVINGS",
        "DONATIONS",
        "OTHER",
    ],
)
IdentificationType = TypeAliasType("IdentificationType", Literal["SSN", "ITIN", "EIN", "NON_US_TAX_ID"])
EndUserTermsAcceptanceMethod = TypeAliasType(
    "EndUserTermsAcceptanceMethod", Literal["CHECKBOX", "CLICK_TO_ACCEPT"]
)

Str200 = Annotated[str, Field(min_length=1, max_length=200)]
CountryCode = Annotated[str, Field(min_length=2, max_length=2, description="ISO 3166-1 alpha-2")]
E164 = r"^\+[1-9]\d{1,14}$"
OtherDescription = Annotated[str, Field(min_length=1, max_length=500)]
CATEGORIES_MAX = 20  # a category list names each category at most once


class Address(ApiRequest):
    """A postal address: the same object in requests and responses."""

    line1: Str200
    line2: Str200 | None = None
    city: Str200 | None = None
    state: Str200 | None = None
    postal_code: str = Field(min_length=1, max_length=20)
    country: CountryCode


class BusinessInfoUpdate(ApiRequest):
    """A business's details. Every field is optional here; on create (BusinessInfo) legalName, taxId and
    incorporatedOn are required."""

    legal_name: Str200 | None = None
    tax_id: str | None = Field(default=None, min_length=1, max_length=64)
    incorporated_on: JsonDate | None = None
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
    naics_code: str | None = Field(
        default=None, pattern=r"^\d{2,6}$", description="NAICS code of the business: 2 to 6 digits"
    )
    source_of_funds_categories: list[SourceOfFundsCategory] | None = Field(
        default=None, max_length=CATEGORIES_MAX
    )
    source_of_funds_other_description: OtherDescription | None = Field(
        default=None, description="required when sourceOfFundsCategories includes OTHER"
    )
    purpose_of_account_other_description: OtherDescription | None = Field(
        default=None, description="required when purposeOfAccount is OTHER"
    )
    expected_counterparty_countries: list[CountryCode] | None = Field(default=None, max_length=250)
    primary_contact_first_name: str | None = Field(default=None, min_length=1, max_length=250)
    primary_contact_last_name: str | None = Field(default=None, min_length=1, max_length=250)


class BusinessInfo(BusinessInfoUpdate):
    """A business's details when the customer is created: legalName, taxId and incorporatedOn required."""

    legal_name: Str200
    tax_id: str = Field(min_length=1, max_length=64)
    incorporated_on: JsonDate


class BusinessInfoResponse(ApiModel):
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
    naics_code: str | None = None
    source_of_funds_categories: list[str] | None = None
    source_of_funds_other_description: str | None = None
    purpose_of_account_other_description: str | None = None
    expected_counterparty_countries: list[str] | None = None
    primary_contact_first_name: str | None = None
    primary_contact_last_name: str | None = None


class EndUserTermsConsentRequest(ApiRequest):
    """Evidence that the customer accepted the End User Terms (GET /customers/end-user-terms): when, from
    which address, which version, how."""

    accepted_at: AwareJsonDatetime = Field(
        description="when the customer accepted, ISO 8601 with a time zone; not in the future"
    )
    ip_address: str = Field(
        min_length=2, max_length=45, description="the IPv4 or IPv6 address of the customer's device"
    )
    terms_version: str = Field(
        min_length=1, max_length=64, description="the version accepted: the current one"
    )
    acceptance_method: EndUserTermsAcceptanceMethod


class EndUserTermsConsent(EndUserTermsConsentRequest):
    """The acceptance recorded on a customer, as it was given."""


class EndUserTerms(ApiModel):
    """GET /customers/end-user-terms: the current version of the End User Terms and where they are."""

    version: str = Field(examples=["V1"])
    url: str = Field(description="where this version of the terms can be read")


def _phone_number() -> Any:
    return Field(default=None, pattern=E164, description="E.164, e.g. +14155551234")


def _consent() -> Any:
    return Field(
        default=None,
        description="the customer's acceptance of the End User Terms; required before a quote when the "
        "platform's endUserTermsRequired is on",
    )


class _IndividualExtras(ApiRequest):
    """An individual's identification and enhanced-due-diligence answers (the reference's
    IndividualCustomerFields and CustomerEdd), the same on create and update."""

    id_type: IdentificationType | None = Field(
        default=None, description="SSN or ITIN (the identifier's kind); given with identifier"
    )
    identifier: str | None = Field(
        default=None,
        min_length=9,
        max_length=11,
        description="write-only: the SSN or ITIN as ###-##-####, kept sealed and never returned",
        json_schema_extra={"writeOnly": True},
    )
    country_of_issuance: CountryCode | None = Field(
        default=None, description="the identification's issuing country: US (the default) for SSN and ITIN"
    )
    source_of_funds_categories: list[IndividualSourceOfFundsCategory] | None = Field(
        default=None, max_length=CATEGORIES_MAX
    )
    source_of_funds_other_description: OtherDescription | None = Field(
        default=None, description="required when sourceOfFundsCategories includes OTHER"
    )
    source_of_wealth_categories: list[SourceOfWealthCategory] | None = Field(
        default=None, max_length=CATEGORIES_MAX
    )
    source_of_wealth_other_description: OtherDescription | None = Field(
        default=None, description="required when sourceOfWealthCategories includes OTHER"
    )
    purpose_of_account: PurposeOfAccount | None = None
    purpose_of_account_other_description: OtherDescription | None = Field(
        default=None, description="required when purposeOfAccount is OTHER"
    )
    expected_monthly_transaction_count: ExpectedMonthlyTransactionCount | None = None
    expected_monthly_transaction_volume: ExpectedMonthlyTransactionVolume | None = None
    annual_income_range: AnnualIncomeRange | None = None
    net_worth_range: NetWorthRange | None = None
    pep_status: PepStatus | None = None


# What leaving these out of a create means: a null must not mean it by accident.
_GENERATED = NullRefused("to have one generated")
_PLATFORM_CURRENCIES = NullRefused("for the platform's currencies")


def _uma_address() -> Any:
    return Field(default=None, min_length=3, max_length=320, description="$username@umaDomain")


def _currencies() -> Any:
    return Field(default=None, min_length=1, max_length=50, description="currencies this customer will use")


def _birth_date() -> Any:
    return Field(default=None, max_length=10, description="YYYY-MM-DD, in the past")


class CustomerCreateRequest(ApiRequest):
    """What every customer is created with; `customerType` selects the rest (IndividualCustomerCreateRequest,
    BusinessCustomerCreateRequest)."""

    platform_customer_id: Annotated[str | None, _GENERATED] = Field(
        default=None, min_length=1, max_length=255
    )
    customer_type: CustomerType = Field(description="INDIVIDUAL or BUSINESS: selects the fields validated")
    region: CountryCode | None = Field(default=None, description="ISO 3166-1 alpha-2; immutable after create")
    currencies: Annotated[list[str] | None, _PLATFORM_CURRENCIES] = _currencies()
    email: str | None = Field(default=None, min_length=3, max_length=254)
    phone_number: str | None = _phone_number()
    uma_address: Annotated[str | None, _GENERATED] = _uma_address()
    end_user_terms_consent: EndUserTermsConsentRequest | None = _consent()


class IndividualCustomerCreateRequest(CustomerCreateRequest, _IndividualExtras):
    customer_type: Literal["INDIVIDUAL"]
    full_name: Str200 | None = None
    birth_date: str | None = _birth_date()
    nationality: CountryCode | None = None
    address: Address | None = None


class BusinessCustomerCreateRequest(CustomerCreateRequest):
    customer_type: Literal["BUSINESS"]
    address: Address | None = None
    business_info: BusinessInfo | None = None


class CustomerUpdateRequest(ApiRequest):
    """What every customer's update may change; `customerType` is required and must be the customer's."""

    customer_type: CustomerType
    platform_customer_id: str | None = Field(default=None, min_length=1, max_length=255)
    region: CountryCode | None = Field(default=None, description="immutable: set only on create")
    currencies: list[str] | None = _currencies()
    email: str | None = Field(default=None, min_length=3, max_length=254)
    phone_number: str | None = _phone_number()
    uma_address: str | None = _uma_address()
    end_user_terms_consent: EndUserTermsConsentRequest | None = _consent()


class IndividualCustomerUpdateRequest(CustomerUpdateRequest, _IndividualExtras):
    customer_type: Literal["INDIVIDUAL"]
    full_name: Str200 | None = None
    birth_date: str | None = Field(default=None, max_length=10)
    nationality: CountryCode | None = None
    address: Address | None = None


class BusinessCustomerUpdateRequest(CustomerUpdateRequest):
    customer_type: Literal["BUSINESS"]
    address: Address | None = None
    business_info: BusinessInfoUpdate | None = None


def _documented_as(variants: Any) -> Any:
    """A flat body's JSON schema: the oneOf of its variants by customerType, as the reference documents it."""
    adapter = TypeAdapter(Annotated[variants, Field(discriminator="customer_type")])

    def schema(
        cls: type[BaseModel], core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(adapter.core_schema)

    return classmethod(schema)


class _CustomerFields(_IndividualExtras):
    platform_customer_id: str | None = Field(default=None, min_length=1, max_length=255)
    uma_address: str | None = _uma_address()
    email: str | None = Field(default=None, min_length=3, max_length=254)
    phone_number: str | None = _phone_number()
    end_user_terms_consent: EndUserTermsConsentRequest | None = _consent()
    currencies: list[str] | None = _currencies()
    address: Address | None = None

    def draft(self) -> CustomerDraft:
        """The fields this body gave (nested ones too, a null as None), as the customer services take them."""
        return cast(CustomerDraft, self.model_dump(exclude_unset=True))


class CustomerCreateRequestOneOf(_CustomerFields):
    """POST /customers' body, validated as one flat object: `customerType` selects which fields apply, and
    the service refuses the other type's (one 400 naming every problem). The document shows it as the
    reference does, the oneOf of IndividualCustomerCreateRequest and BusinessCustomerCreateRequest, whose
    fields together are exactly these (tests/customers/test_schemas.py)."""

    customer_type: CustomerType = Field(description="INDIVIDUAL or BUSINESS: selects the fields validated")
    platform_customer_id: Annotated[str | None, _GENERATED] = Field(
        default=None, min_length=1, max_length=255
    )
    uma_address: Annotated[str | None, _GENERATED] = _uma_address()
    currencies: Annotated[list[str] | None, _PLATFORM_CURRENCIES] = _currencies()
    region: CountryCode | None = Field(default=None, description="ISO 3166-1 alpha-2; immutable after create")
    full_name: Str200 | None = None
    birth_date: str | None = _birth_date()
    nationality: CountryCode | None = None
    business_info: BusinessInfoUpdate | None = None

    __get_pydantic_json_schema__ = _documented_as(
        IndividualCustomerCreateRequest | BusinessCustomerCreateRequest
    )


class CustomerUpdateRequestOneOf(_CustomerFields):
    """PATCH /customers/{customerId}'s body, a partial update validated flat like the create's;
    `customerType` is required and must be the customer's type. Documented as the oneOf of
    IndividualCustomerUpdateRequest and BusinessCustomerUpdateRequest."""

    customer_type: CustomerType
    region: CountryCode | None = Field(default=None, description="immutable: set only on create")
    full_name: Str200 | None = None
    birth_date: str | None = Field(default=None, max_length=10)
    nationality: CountryCode | None = None
    business_info: BusinessInfoUpdate | None = None

    __get_pydantic_json_schema__ = _documented_as(
        IndividualCustomerUpdateRequest | BusinessCustomerUpdateRequest
    )


# ---- beneficial owners: owned by onboarding (platpay/onboarding/owners.py), shown on business customers

BeneficialOwnerRole = TypeAliasType(
    "BeneficialOwnerRole",
    Literal["UBO", "DIRECTOR", "COMPANY_OFFICER", "CONTROL_PERSON", "TRUSTEE", "GENERAL_PARTNER"],
)
IsoDate = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD")]


class BeneficialOwnerPersonalInfo(ApiRequest):
    """An owner's identity (the same object in requests and responses)."""

    first_name: Str200
    middle_name: Str200 | None = None
    last_name: Str200
    birth_date: IsoDate
    nationality: CountryCode
    email: str | None = Field(default=None, min_length=3, max_length=254)
    phone_number: str | None = Field(default=None, pattern=E164, description="E.164, e.g. +14155550192")
    address: Address
    id_type: IdentificationType
    identifier: str = Field(min_length=1, max_length=64)
    country_of_issuance: CountryCode | None = None


class BeneficialOwner(ApiModel):
    id: str = Field(examples=["BeneficialOwner:019542f5-b3e7-1d02-0000-000000000001"])
    customer_id: str
    roles: list[BeneficialOwnerRole]
    ownership_percentage: int
    personal_info: BeneficialOwnerPersonalInfo
    kyc_status: KycStatus
    created_at: datetime
    updated_at: datetime | None = None


class Customer(ApiModel):
    """What every customer has; `customerType` says which of IndividualCustomer and BusinessCustomer it is
    (CustomerOneOf), and that one adds its type's fields."""

    id: str = Field(examples=["Customer:019542f5-b3e7-1d02-0000-000000000001"])
    platform_customer_id: str
    customer_type: CustomerType
    uma_address: str
    kyc_status: KycStatus
    region: str | None = None
    currencies: list[str]
    email: str | None = None
    phone_number: str | None = Field(default=None, description="E.164")
    address: Address | None = None
    end_user_terms_consent: EndUserTermsConsent | None = Field(
        default=None, description="the customer's acceptance of the End User Terms; omitted until recorded"
    )
    is_deleted: bool
    created_at: datetime
    updated_at: datetime
    contact_verification: ContactVerification | None = Field(
        default=None,
        description="only when the provider of one of the customer's currencies requires contact verification: "
        "the required channels, each PENDING until confirmed (verify-email, verify-phone)",
    )


class IndividualCustomer(Customer):
    customer_type: Literal["INDIVIDUAL"]
    full_name: str | None = None
    birth_date: date | None = None
    nationality: str | None = None
    id_type: IdentificationType | None = Field(
        default=None, description="the kind of identification on file (its identifier is never returned)"
    )
    country_of_issuance: str | None = None
    source_of_funds_categories: list[IndividualSourceOfFundsCategory] | None = None
    source_of_funds_other_description: str | None = None
    source_of_wealth_categories: list[SourceOfWealthCategory] | None = None
    source_of_wealth_other_description: str | None = None
    purpose_of_account: PurposeOfAccount | None = None
    purpose_of_account_other_description: str | None = None
    expected_monthly_transaction_count: ExpectedMonthlyTransactionCount | None = None
    expected_monthly_transaction_volume: ExpectedMonthlyTransactionVolume | None = None
    annual_income_range: AnnualIncomeRange | None = None
    net_worth_range: NetWorthRange | None = None
    pep_status: PepStatus | None = None


class BusinessCustomer(Customer):
    customer_type: Literal["BUSINESS"]
    kyb_status: KybStatus = Field(
        description="the reference's name for a business's status: always kycStatus"
    )
    business_info: BusinessInfoResponse | None = None
    beneficial_owners: list[BeneficialOwner] = Field(
        default_factory=list,
        description="the business's beneficial owners (POST /beneficial-owners), oldest first; empty when none",
    )


CustomerOneOf = TypeAliasType(
    "CustomerOneOf",
    Annotated[IndividualCustomer | BusinessCustomer, Field(discriminator="customer_type")],
)
"""A customer of either type, as GET /customers/{customerId} answers it."""


class CustomerListResponse(Page[CustomerOneOf]):
    """GET /customers."""


class SandboxKycStatusRequest(ApiRequest):
    """POST /sandbox/customers/{customerId}/kyc: the outcome a KYC (KYB) review would reach."""

    kyc_status: KycStatus


_ADDRESS = {
    "line1": "1 Main St",
    "city": "Springfield",
    "state": "IL",
    "postalCode": "62701",
    "country": "US",
}
CUSTOMER_CREATE_EXAMPLES = request_examples(
    individualCustomer=(
        "An individual",
        {
            "customerType": "INDIVIDUAL",
            "platformCustomerId": "ind-9f84e0c2",
            "region": "US",
            "currencies": ["USD"],
            "email": "jane.doe@example.com",
            "phoneNumber": "+14155551234",
            "fullName": "Jane Doe",
            "birthDate": "1990-04-12",
            "nationality": "US",
            "address": _ADDRESS,
        },
    ),
    businessCustomer=(
        "A business",
        {
            "customerType": "BUSINESS",
            "platformCustomerId": "biz-acme-001",
            "region": "US",
            "currencies": ["USD"],
            "businessInfo": {
                "legalName": "Acme Corporation",
                "doingBusinessAs": "Acme",
                "country": "US",
                "registrationNumber": "5523041",
                "incorporatedOn": "2018-03-14",
                "entityType": "LLC",
                "taxId": "47-1234567",
                "businessType": "INFORMATION",
                "purposeOfAccount": "CONTRACTOR_PAYOUTS",
            },
            "address": {
                **_ADDRESS,
                "line1": "500 Market St",
                "city": "San Francisco",
                "state": "CA",
                "postalCode": "94105",
            },
        },
    ),
)
CUSTOMER_UPDATE_EXAMPLES = request_examples(
    individualEmail=(
        "Change an individual's email",
        {"customerType": "INDIVIDUAL", "email": "jane@example.org"},
    ),
    businessName=(
        "Change a business's trading name",
        {"customerType": "BUSINESS", "businessInfo": {"doingBusinessAs": "Acme Payments"}},
    ),
    endUserTermsConsent=(
        "Record the customer's acceptance of the End User Terms (GET /customers/end-user-terms)",
        {
            "customerType": "INDIVIDUAL",
            "endUserTermsConsent": {
                "acceptedAt": "2025-07-21T17:30:00Z",
                "ipAddress": "198.51.100.24",
                "termsVersion": "V1",
                "acceptanceMethod": "CHECKBOX",
            },
        },
    ),
)
SANDBOX_KYC_EXAMPLES = request_examples(
    approved=("The review approves the customer", {"kycStatus": "APPROVED"})
)
