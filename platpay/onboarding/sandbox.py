"""The sandbox KYC provider (onboarding/providers.py): INTERFACE-FACTS §7's magic suffixes.

The last three characters decide: `001` a person must review (the verification waits in
PENDING_MANUAL_REVIEW, the customer stays PENDING), `002` rejected, anything else approved. What they are
read from: a business's `businessInfo.registrationNumber`, a beneficial owner's `personalInfo.lastName`
(the reference's two), and, platpay's choice for individuals (whose names cannot hold digits), the user
part of the customer's `email` (`jane.002@example.com`, as the sandbox's PIX email keys carry theirs).
"""

from __future__ import annotations

from platpay.config import Settings
from platpay.onboarding.providers import SANDBOX_KYC_PROVIDER, Decision, KycProvider, ReviewSubject

BY_SUFFIX = {"001": Decision.MANUAL_REVIEW, "002": Decision.REJECTED}


def decision_for(value: str | None) -> Decision:
    return BY_SUFFIX.get((value or "")[-3:], Decision.APPROVED)


class SandboxKycProvider:
    link_provider = "SUMSUB"

    async def review(self, subject: ReviewSubject) -> Decision:
        if subject.kind == "BUSINESS":
            return decision_for(subject.registration_number)
        if subject.kind == "BENEFICIAL_OWNER":
            return decision_for(subject.last_name)
        return decision_for((subject.email or "").split("@", 1)[0])


@SANDBOX_KYC_PROVIDER.implementation("sandbox")
def _sandbox(settings: Settings) -> KycProvider:
    return SandboxKycProvider()
