"""The sandbox KYC provider (onboarding/providers.py): INTERFACE-FACTS §7's magic suffixes, with the August
reference's individual outcomes by `fullName` beside them (docs/sandbox.md).

The last three characters decide: `001` a person must review (the verification waits in
PENDING_MANUAL_REVIEW, the customer stays PENDING), `002` rejected, anything else approved. What they are
read from: a business's `businessInfo.registrationNumber` (where `003` also waits for a person, as the
reference's businesses do), a beneficial owner's `personalInfo.lastName` (the reference's two), and for an
individual its `fullName` when that ends in three digits (customers/sandbox.py: such a name also decides the
status at creation, and `003` is screened out with a POOR_QUALITY_DOCUMENT error), else the user part of
its `email` (`jane.002@example.com`: platpay's choice from before the reference's, kept).
"""

from __future__ import annotations

from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.onboarding.providers import SANDBOX_KYC_PROVIDER, Decision, Finding, KycProvider, ReviewSubject

BY_SUFFIX = {"001": Decision.MANUAL_REVIEW, "002": Decision.REJECTED}
BUSINESS_BY_SUFFIX = {**BY_SUFFIX, "003": Decision.MANUAL_REVIEW}
POOR_QUALITY_SUFFIX = "003"
_IDENTITY_TYPES = ("PASSPORT", "DRIVERS_LICENSE", "NATIONAL_ID")


def decision_for(value: str | None, table: dict[str, Decision] = BY_SUFFIX) -> Decision:
    return table.get((value or "")[-3:], Decision.APPROVED)


class SandboxKycProvider:
    link_provider = "SUMSUB"

    async def review(self, subject: ReviewSubject) -> Decision:
        if subject.kind == "BUSINESS":
            return decision_for(subject.registration_number, BUSINESS_BY_SUFFIX)
        if subject.kind == "BENEFICIAL_OWNER":
            return decision_for(subject.last_name)
        if customers_service.sandbox_name_suffix(subject.full_name) is not None:
            return decision_for(subject.full_name)
        return decision_for((subject.email or "").split("@", 1)[0])

    async def screen(self, subject: ReviewSubject) -> list[Finding]:
        if (
            subject.kind != "INDIVIDUAL"
            or customers_service.sandbox_name_suffix(subject.full_name) != POOR_QUALITY_SUFFIX
        ):
            return []
        identity = next((doc_id for doc_id, kind in subject.documents if kind in _IDENTITY_TYPES), subject.id)
        return [
            Finding(
                resource_id=identity,
                type="POOR_QUALITY_DOCUMENT",
                reason="the identity document is too blurred to read: upload a sharper scan (sandbox: a fullName "
                "ending in 003)",
            )
        ]


@SANDBOX_KYC_PROVIDER.implementation("sandbox")
def _sandbox(settings: Settings) -> KycProvider:
    return SandboxKycProvider()
