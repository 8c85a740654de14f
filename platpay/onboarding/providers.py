"""What onboarding needs from outside (kit/providers.py): a KYC/KYB review provider, and a store for the
documents' files (storage.py).

A review is asked about one subject at a time (a customer, or one beneficial owner of a business) and
answers APPROVED, REJECTED or MANUAL_REVIEW (a person must look: the verification waits in
PENDING_MANUAL_REVIEW and the customer stays PENDING). Before a submission goes to review, the provider
screens the customer (`screen`, inside the submitting request: it must be quick): what it finds (a document
it cannot use) sends the verification back to RESOLVE_ERRORS with those errors, the customer unchanged. Sandbox tenants use PLATPAY_SANDBOX_KYC_PROVIDER
(`sandbox`: the magic suffixes of INTERFACE-FACTS §7, onboarding/sandbox.py); production tenants use
PLATPAY_KYC_PROVIDER, `manual` by default (every review waits for a person: platpay approves no one on its
own) or an adapter `package.module:factory` for a real provider. `provider_for` is the one place the
environment picks between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from platpay.config import Settings
from platpay.kit.providers import Slot


class Decision(StrEnum):
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    MANUAL_REVIEW = "MANUAL_REVIEW"


@dataclass(frozen=True)
class ReviewSubject:
    """Who is reviewed, with what a provider matches on. No document content: a real adapter fetches what
    it needs from the document store by `document_keys`."""

    kind: str  # INDIVIDUAL | BUSINESS | BENEFICIAL_OWNER
    id: str
    platform_customer_id: str | None = None
    email: str | None = None
    full_name: str | None = None
    last_name: str | None = None
    registration_number: str | None = None
    country: str | None = None
    document_keys: tuple[str, ...] = ()
    documents: tuple[tuple[str, str], ...] = ()  # (document id, documentType) of the subject's documents


@dataclass(frozen=True)
class Finding:
    """Something a screening found to correct before any review: a verification error of `type` (a
    VerificationErrorType: POOR_QUALITY_DOCUMENT, ...) about the resource `resource_id` (the customer, or
    one of its documents)."""

    resource_id: str
    type: str
    reason: str


class KycProvider(Protocol):
    # The `provider` a KYC link names (KycLinkResponse.provider: the reference's enumeration).
    link_provider: str

    async def review(self, subject: ReviewSubject) -> Decision: ...

    async def screen(self, subject: ReviewSubject) -> list[Finding]: ...


KYC_PROVIDER: Slot[KycProvider] = Slot("kyc_provider", default="manual")
SANDBOX_KYC_PROVIDER: Slot[KycProvider] = Slot("sandbox_kyc_provider")


def provider_for(*, is_sandbox: bool) -> KycProvider:
    return SANDBOX_KYC_PROVIDER.get() if is_sandbox else KYC_PROVIDER.get()


class ManualReview:
    """Every review waits for a person (the production default until an adapter is configured)."""

    link_provider = "SUMSUB"

    async def review(self, subject: ReviewSubject) -> Decision:
        return Decision.MANUAL_REVIEW

    async def screen(self, subject: ReviewSubject) -> list[Finding]:
        return []  # a person reviews the documents themselves


@KYC_PROVIDER.implementation("manual")
def _manual(settings: Settings) -> KycProvider:
    return ManualReview()
