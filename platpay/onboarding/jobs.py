"""Onboarding's jobs: the review of a submitted verification and of a beneficial owner. Each reads who to
review in one transaction, asks the KYC provider outside any (a real provider is a network call), and
records the outcome with the job's own finishing transaction."""

from __future__ import annotations

from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext
from platpay.onboarding import service as onboarding_service
from platpay.onboarding.providers import Decision, provider_for
from platpay.onboarding.state import OwnerKycStatus
from platpay.tenants import service as tenants_service

_OWNER_STATUS = {
    Decision.APPROVED: OwnerKycStatus.APPROVED,
    Decision.REJECTED: OwnerKycStatus.REJECTED,
    Decision.MANUAL_REVIEW: OwnerKycStatus.PENDING,
}


@handler(onboarding_service.REVIEW_VERIFICATION_JOB)
async def review_verification(ctx: JobContext) -> None:
    tenant_id = ctx.tenant_id or ""
    verification_id = ctx.payload["verificationId"]
    async with ctx.db.read() as session:
        subjects = await onboarding_service.verification_review_subjects(
            session, tenant_id=tenant_id, verification_id=verification_id
        )
        is_sandbox = await tenants_service.is_sandbox(session, tenant_id=tenant_id)
    provider = provider_for(is_sandbox=is_sandbox)
    decisions = {subject.id: await provider.review(subject) for subject in subjects}
    async with ctx.transaction() as session:
        if decisions:
            await onboarding_service.record_verification_review(
                session, tenant_id=tenant_id, verification_id=verification_id, decisions=decisions
            )


@handler(onboarding_service.REVIEW_OWNER_JOB)
async def review_owner(ctx: JobContext) -> None:
    tenant_id = ctx.tenant_id or ""
    owner_id, version = ctx.payload["beneficialOwnerId"], ctx.payload["version"]
    async with ctx.db.read() as session:
        owner = await onboarding_service.owner_review_subject(
            session, tenant_id=tenant_id, owner_id=owner_id, version=version
        )
        is_sandbox = await tenants_service.is_sandbox(session, tenant_id=tenant_id)
    decision = None
    if owner is not None:
        decision = await provider_for(is_sandbox=is_sandbox).review(
            onboarding_service.owner_review_request(owner)
        )
    async with ctx.transaction() as session:
        if decision is not None:
            await onboarding_service.record_owner_review(
                session,
                tenant_id=tenant_id,
                owner_id=owner_id,
                version=version,
                status=_OWNER_STATUS[decision],
            )
