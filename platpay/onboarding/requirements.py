"""What a verification needs, as data: per customer type, the customer's fields and documents, what each
beneficial owner of a business needs, and the extra fields some currencies' providers ask for.

`verifications.py` walks these tables; the hosted page (page/endpoints.py) asks for exactly what they say is
missing. A field is named by its dot path in the API (`customer.address.line1`) and read from the customer
as GET /customers/{id} returns it; a document requirement is satisfied by any one of its accepted types
held by the customer (or, for owners, by the owner).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class FieldRequirement:
    path: str  # as the verification error names it: customer.address.line1
    label: str  # what the hosted page's form calls it


@dataclass(frozen=True)
class DocumentRequirement:
    error_type: str  # the MISSING_*_DOCUMENT error type
    accepted: tuple[str, ...]
    label: str


IDENTITY = DocumentRequirement(
    "MISSING_IDENTITY_DOCUMENT", ("PASSPORT", "DRIVERS_LICENSE", "NATIONAL_ID"), "Identity document"
)
PROOF_OF_ADDRESS = DocumentRequirement(
    "MISSING_PROOF_OF_ADDRESS_DOCUMENT",
    (
        "PROOF_OF_ADDRESS",
        "UTILITY_BILL",
        "RENT_OR_LEASE_AGREEMENT",
        "ELECTRICITY_BILL",
        "BANK_STATEMENT",
        "TAX_RETURN",
    ),
    "Proof of address",
)
LEGAL_PRESENCE = DocumentRequirement(
    "MISSING_LEGAL_PRESENCE_DOCUMENT",
    (
        "CERTIFICATE_OF_INCORPORATION",
        "ARTICLES_OF_INCORPORATION",
        "ARTICLES_OF_ASSOCIATION",
        "STATE_REGISTRY_EXCERPT",
    ),
    "Company formation document",
)
OWNERSHIP_STRUCTURE = DocumentRequirement(
    "MISSING_OWNERSHIP_STRUCTURE_DOCUMENT",
    ("SHAREHOLDER_REGISTER", "TRUST_AGREEMENT", "PARTNERSHIP_AGREEMENT"),
    "Ownership structure document",
)

GOOD_STANDING = DocumentRequirement(
    "MISSING_GOOD_STANDING_DOCUMENT", ("GOOD_STANDING_CERTIFICATE",), "Certificate of good standing"
)
# Entities that answer to a regulator beyond their incorporation (a charity commission, a foundations
# register) show they are in good standing with it: platpay's rule, the reference names the error only.
GOOD_STANDING_ENTITY_TYPES = frozenset({"CHARITY", "PRIVATE_FOUNDATION"})
# The roles that make a beneficial owner one who controls the business (the control prong of customer due
# diligence: a senior manager, a general partner, a trustee); a business needs at least one.
CONTROL_ROLES = frozenset({"CONTROL_PERSON", "DIRECTOR", "COMPANY_OFFICER", "GENERAL_PARTNER", "TRUSTEE"})
DOCUMENTS = (IDENTITY, PROOF_OF_ADDRESS, LEGAL_PRESENCE, OWNERSHIP_STRUCTURE, GOOD_STANDING)

_ADDRESS = (
    FieldRequirement("customer.address.line1", "Street address"),
    FieldRequirement("customer.address.city", "City"),
    FieldRequirement("customer.address.postalCode", "Postal code"),
    FieldRequirement("customer.address.country", "Country"),
)


@dataclass(frozen=True)
class Requirements:
    fields: tuple[FieldRequirement, ...]
    documents: tuple[DocumentRequirement, ...]
    min_beneficial_owners: int = 0
    owner_documents: tuple[DocumentRequirement, ...] = ()
    min_age_years: int | None = None  # of an individual, from customer.birthDate


BY_CUSTOMER_TYPE = {
    "INDIVIDUAL": Requirements(
        fields=(
            FieldRequirement("customer.fullName", "Full name"),
            FieldRequirement("customer.birthDate", "Date of birth"),
            *_ADDRESS,
        ),
        documents=(IDENTITY, PROOF_OF_ADDRESS),
        min_age_years=18,
    ),
    "BUSINESS": Requirements(
        fields=(
            FieldRequirement("customer.businessInfo.legalName", "Legal name"),
            FieldRequirement("customer.businessInfo.taxId", "Tax id"),
            FieldRequirement("customer.businessInfo.incorporatedOn", "Incorporation date"),
            FieldRequirement("customer.businessInfo.registrationNumber", "Registration number"),
            *_ADDRESS,
        ),
        documents=(LEGAL_PRESENCE, OWNERSHIP_STRUCTURE, PROOF_OF_ADDRESS),
        min_beneficial_owners=1,
        owner_documents=(IDENTITY,),
    ),
}

# Extra fields the KYC providers of some currencies ask for, beyond the base set (and beyond the platform
# configuration's providerRequiredCustomerFields, which verifications.py adds for every currency the
# customer uses): SEPA (EUR) and SPEI (MXN) providers identify individuals by nationality too.
BY_CURRENCY: dict[str, dict[str, tuple[FieldRequirement, ...]]] = {
    "EUR": {"INDIVIDUAL": (FieldRequirement("customer.nationality", "Nationality"),)},
    "MXN": {"INDIVIDUAL": (FieldRequirement("customer.nationality", "Nationality"),)},
}

LABELS = {
    "customer.email": "Email",
    "customer.nationality": "Nationality",
    "customer.address": "Address",
    "customer.businessInfo.businessType": "Business type",
}


def for_customer(
    customer_type: str, currencies: list[str], *, entity_type: str | None = None
) -> tuple[Requirements, tuple[FieldRequirement, ...]]:
    """The customer type's requirements (with the documents its entity type adds) and the fields its
    currencies add."""
    extra: list[FieldRequirement] = []
    for code in currencies:
        for requirement in BY_CURRENCY.get(code, {}).get(customer_type, ()):
            if requirement not in extra:
                extra.append(requirement)
    needed = BY_CUSTOMER_TYPE[customer_type]
    if customer_type == "BUSINESS" and entity_type in GOOD_STANDING_ENTITY_TYPES:
        needed = replace(needed, documents=(*needed.documents, GOOD_STANDING))
    return needed, tuple(extra)
