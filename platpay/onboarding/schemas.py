"""Onboarding's request and response bodies, named as the reference names them (INTERFACE-FACTS §3.10)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator
from typing_extensions import TypeAliasType

from platpay.customers.schemas import (  # owners are shown on business customers: customers defines them
    E164,
    Address,
    BeneficialOwner,
    BeneficialOwnerPersonalInfo,
    BeneficialOwnerRole,
    CountryCode,
    IdentificationType,
    IsoDate,
    Str200,
)
from platpay.kit.api_model import KEPT_WHEN_OMITTED, ApiModel, ApiRequest
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.kit.pagination import Page

VerificationStatus = TypeAliasType(
    "VerificationStatus",
    Literal[
        "RESOLVE_ERRORS",
        "PENDING_MANUAL_REVIEW",
        "IN_PROGRESS",
        "APPROVED",
        "REJECTED",
        "READY_FOR_VERIFICATION",
    ],
)
VerificationErrorType = TypeAliasType(
    "VerificationErrorType",
    Literal[
        "MISSING_FIELD",
        "INVALID_FIELD",
        "MISSING_LEGAL_PRESENCE_DOCUMENT",
        "MISSING_CONTROL_STRUCTURE_DOCUMENT",
        "MISSING_OWNERSHIP_STRUCTURE_DOCUMENT",
        "MISSING_PROOF_OF_ADDRESS_DOCUMENT",
        "MISSING_IDENTITY_DOCUMENT",
        "INVALID_DOCUMENT",
        "EXPIRED_DOCUMENT",
        "POOR_QUALITY_DOCUMENT",
        "SUSPECTED_FRAUD_DOCUMENT",
        "WRONG_DOCUMENT_TYPE",
        "INCOMPLETE_DOCUMENT",
        "UNREADABLE_DOCUMENT",
        "DOCUMENT_VERIFICATION_FAILED",
        "APPLICANT_SANCTIONED",
        "APPLICANT_FRAUD",
        "APPLICANT_CRIMINAL_RECORD",
        "APPLICANT_REJECTED",
        "MISSING_BENEFICIAL_OWNER",
        "MISSING_CONTROL_PERSON",
        "MISSING_GOOD_STANDING_DOCUMENT",
    ],
)
DOCUMENT_TYPES = (
    "PASSPORT",
    "DRIVERS_LICENSE",
    "NATIONAL_ID",
    "PROOF_OF_ADDRESS",
    "BANK_STATEMENT",
    "TAX_RETURN",
    "CERTIFICATE_OF_INCORPORATION",
    "ARTICLES_OF_INCORPORATION",
    "ARTICLES_OF_ASSOCIATION",
    "STATE_REGISTRY_EXCERPT",
    "GOOD_STANDING_CERTIFICATE",
    "INFORMATION_STATEMENT",
    "INCUMBENCY_CERTIFICATE",
    "BUSINESS_LICENSE",
    "SHAREHOLDER_REGISTER",
    "POWER_OF_ATTORNEY",
    "UTILITY_BILL",
    "ELECTRICITY_BILL",
    "RENT_OR_LEASE_AGREEMENT",
    "DIRECTOR_REGISTRY",
    "TRUST_AGREEMENT",
    "STATE_COMPANY_REGISTRY",
    "PARTNERSHIP_CONTROL_AGREEMENT",
    "PARTNERSHIP_AGREEMENT",
    "SELFIE",
    "OTHER",
)
DocumentType = TypeAliasType("DocumentType", Literal[DOCUMENT_TYPES])  # type: ignore[valid-type]
KycProvider = TypeAliasType("KycProvider", Literal["SUMSUB"])


# ---- verifications


class VerificationRequest(ApiRequest):
    customer_id: str = Field(min_length=1, max_length=64, examples=[ExampleIds.CUSTOMER])


class VerificationError(ApiModel):
    resource_id: str
    type: VerificationErrorType
    field: str | None = None
    accepted_document_types: list[DocumentType] | None = None
    reason: str


class Verification(ApiModel):
    id: str = Field(examples=["Verification:019542f5-b3e7-1d02-0000-000000000001"])
    customer_id: str
    verification_status: VerificationStatus
    errors: list[VerificationError]
    created_at: datetime
    updated_at: datetime | None = None
    decided_by: str | None = Field(
        None,
        description="platpay: the id of the API token whose POST /verifications/{verificationId}/decision "
        "decided this verification's manual review; absent when the KYC provider (or the sandbox) decided",
    )
    decision_reason: str | None = Field(
        None, description="platpay: the reason given with that decision, when one was"
    )


class VerificationListResponse(Page[Verification]):
    """GET /verifications."""


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


class VerificationDecisionRequest(ApiRequest):
    """POST /verifications/{verificationId}/decision (platpay's): a person's decision of a manual review."""

    decision: Literal["APPROVED", "REJECTED"]
    reason: Annotated[str | None, BeforeValidator(_stripped)] = Field(
        None,
        min_length=1,
        max_length=500,
        validate_default=True,
        description="why (surrounding whitespace removed); required to reject, it becomes the "
        "APPLICANT_REJECTED error's reason",
    )

    @field_validator("reason")
    @classmethod
    def _required_to_reject(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None and info.data.get("decision") == "REJECTED":
            raise ValueError("a REJECTED decision needs its reason")
        return value


VERIFICATION_DECISION_EXAMPLES = request_examples(
    approve=("Approve after a manual review", {"decision": "APPROVED"}),
    reject=(
        "Reject, saying why",
        {"decision": "REJECTED", "reason": "the proof of address does not match the applicant's name"},
    ),
)


VERIFICATION_EXAMPLES = request_examples(
    submit=("Submit a customer for KYC/KYB", {"customerId": ExampleIds.CUSTOMER}),
)


# ---- beneficial owners


class BeneficialOwnerPersonalInfoUpdate(ApiRequest):
    """A partial update of an owner's identity: the fields given replace the stored ones. A field every
    owner has (their name, birth date, nationality, address, identification) cannot be cleared: null is
    refused; the optional ones (middleName, email, phoneNumber, countryOfIssuance) are cleared by null."""

    first_name: Annotated[Str200 | None, KEPT_WHEN_OMITTED] = None
    middle_name: Str200 | None = None
    last_name: Annotated[Str200 | None, KEPT_WHEN_OMITTED] = None
    birth_date: Annotated[IsoDate | None, KEPT_WHEN_OMITTED] = None
    nationality: Annotated[CountryCode | None, KEPT_WHEN_OMITTED] = None
    email: str | None = Field(default=None, min_length=3, max_length=254)
    phone_number: str | None = Field(default=None, pattern=E164, description="E.164, e.g. +14155550192")
    address: Annotated[Address | None, KEPT_WHEN_OMITTED] = None
    id_type: Annotated[IdentificationType | None, KEPT_WHEN_OMITTED] = None
    identifier: Annotated[str | None, KEPT_WHEN_OMITTED] = Field(default=None, min_length=1, max_length=64)
    country_of_issuance: CountryCode | None = None


Percentage = Annotated[int, Field(ge=0, le=100, strict=True)]
Roles = Annotated[list[BeneficialOwnerRole], Field(min_length=1, max_length=6)]


class BeneficialOwnerCreateRequest(ApiRequest):
    customer_id: str = Field(min_length=1, max_length=64)
    roles: Roles
    ownership_percentage: Percentage
    personal_info: BeneficialOwnerPersonalInfo


class BeneficialOwnerUpdateRequest(ApiRequest):
    roles: Annotated[Roles | None, KEPT_WHEN_OMITTED] = None
    ownership_percentage: Annotated[Percentage | None, KEPT_WHEN_OMITTED] = None
    personal_info: Annotated[BeneficialOwnerPersonalInfoUpdate | None, KEPT_WHEN_OMITTED] = None


class BeneficialOwnerListResponse(Page[BeneficialOwner]):
    """GET /beneficial-owners."""


_OWNER_INFO = {
    "firstName": "Jane",
    "lastName": "Smith",
    "birthDate": "1978-06-15",
    "nationality": "US",
    "email": "jane.smith@acmecorp.com",
    "phoneNumber": "+14155550192",
    "address": {"line1": "1 Main St", "city": "Springfield", "postalCode": "62701", "country": "US"},
    "idType": "SSN",
    "identifier": "123-45-6789",
    "countryOfIssuance": "US",
}
BENEFICIAL_OWNER_CREATE_EXAMPLES = request_examples(
    owner=(
        "A majority owner who is also a director",
        {
            "customerId": ExampleIds.BUSINESS_CUSTOMER,
            "roles": ["UBO", "DIRECTOR"],
            "ownershipPercentage": 51,
            "personalInfo": _OWNER_INFO,
        },
    )
)
BENEFICIAL_OWNER_UPDATE_EXAMPLES = request_examples(
    ownership=("Change the ownership share", {"ownershipPercentage": 40}),
)


# ---- documents


class Document(ApiModel):
    id: str = Field(examples=["Document:019542f5-b3e7-1d02-0000-000000000001"])
    document_holder: str
    document_type: DocumentType
    side: Literal["FRONT", "BACK"] | None = None
    country: str
    document_number: str | None = None
    issuing_authority: str | None = None
    file_name: str
    created_at: datetime
    updated_at: datetime | None = None


class DocumentListResponse(Page[Document]):
    """GET /documents."""


# ---- KYC links


class KycLinkCreateRequest(ApiRequest):
    redirect_uri: str | None = Field(
        default=None,
        min_length=1,
        max_length=2048,
        description="https://, or http:// to a loopback host (local development)",
    )


class KycLinkResponse(ApiModel):
    kyc_url: str
    expires_at: datetime
    provider: KycProvider
    token: str | None = None


KYC_LINK_EXAMPLES = request_examples(
    redirect=(
        "Send the customer back to your app",
        {"redirectUri": "https://app.example.com/onboarding/done"},
    ),
)


class BaseDocumentRequest(ApiRequest):
    """A document upload's form (multipart/form-data): the file and its metadata. Documents only: the
    endpoints read the form as it streams."""

    file: bytes = Field(description="the document: PDF, JPEG or PNG (judged by its content), at most 10 MiB")
    document_type: DocumentType
    side: Literal["FRONT", "BACK"] | None = None
    country: CountryCode
    document_number: str | None = Field(default=None, max_length=100)
    issuing_authority: str | None = Field(default=None, max_length=200)


class DocumentUploadRequest(BaseDocumentRequest):
    document_holder: str = Field(max_length=64, description="a Customer or BeneficialOwner id")


class DocumentReplaceRequest(BaseDocumentRequest):
    """PUT /documents/{documentId}: every field optional here (a new file and/or metadata to change)."""


# A minimal PDF: examples send it as the file.
EXAMPLE_PDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
_DOCUMENT_FIELDS = {
    "file": EXAMPLE_PDF,
    "documentType": "PASSPORT",
    "country": "US",
    "documentNumber": "A12345678",
}
DOCUMENT_UPLOAD_EXAMPLES: tuple[type[BaseDocumentRequest], dict[str, Any]] = (
    DocumentUploadRequest,
    {
        "passport": (
            "A passport scan for a customer",
            {**_DOCUMENT_FIELDS, "documentHolder": ExampleIds.CUSTOMER},
        )
    },
)
DOCUMENT_REPLACE_EXAMPLES: tuple[type[BaseDocumentRequest], dict[str, Any]] = (
    DocumentReplaceRequest,
    {"rescan": ("A clearer scan of the same passport", _DOCUMENT_FIELDS)},
)
