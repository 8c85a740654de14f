"""Verifications (SPEC §4.5, INTERFACE-FACTS §3.10): POST /verifications computes what the customer still
lacks from the requirements (requirements.py: fields, documents, beneficial owners with a control person) and
answers RESOLVE_ERRORS naming each missing item; when nothing is missing, the KYC provider screens the
submission (a document it cannot use: RESOLVE_ERRORS again, naming it), and otherwise it is submitted for
review: the verification goes IN_PROGRESS, the customer's
kycStatus PENDING (CUSTOMER.KYC_PENDING / KYB_PENDING), its documents are marked submitted and a review job
is queued. The job asks the KYC provider about the customer and each beneficial owner still pending
(outside any transaction) and records the outcome: APPROVED, REJECTED (the rejected subjects named as
APPLICANT_REJECTED errors) or PENDING_MANUAL_REVIEW, moving the customer to APPROVED or REJECTED.
Every status change of a verification emits VERIFICATION.<STATUS> in its transaction.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers import hooks as customers_hooks
from platpay.customers import service as customers_service
from platpay.customers.state import KycStatus
from platpay.errors import InvalidInput
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.onboarding import repository, requirements
from platpay.onboarding.errors import VerificationNotAwaitingReview, VerificationNotFound
from platpay.onboarding.models import BeneficialOwnerRow, VerificationRow
from platpay.onboarding.providers import Decision, ReviewSubject, provider_for
from platpay.onboarding.schemas import Verification, VerificationError
from platpay.onboarding.state import (
    OWNER_KYC,
    UNDER_REVIEW,
    VERIFICATION,
    OwnerKycStatus,
    VerificationStatus,
)
from platpay.tenants import service as tenants_service

REVIEW_JOB = "onboarding.review_verification"
PROVIDER_REJECTION = "the KYC review rejected this applicant"
_OWNER_STATUS = {
    Decision.APPROVED: OwnerKycStatus.APPROVED,
    Decision.REJECTED: OwnerKycStatus.REJECTED,
    Decision.MANUAL_REVIEW: OwnerKycStatus.PENDING,
}


def to_schema(row: VerificationRow) -> Verification:
    return Verification(
        id=row.id,
        customer_id=row.customer_id,
        verification_status=row.status,
        errors=[VerificationError.model_validate(e) for e in row.errors],
        created_at=row.created_at,
        updated_at=row.updated_at,
        decided_by=row.decided_by,
        decision_reason=row.decision_reason,
    )


def _value(document: dict[str, Any], path: str) -> Any:
    node: Any = document
    for part in path.split(".")[1:]:  # past "customer."
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _error(resource_id: str, type: str, reason: str, **extra: Any) -> dict[str, Any]:
    return {"resourceId": resource_id, "type": type, "reason": reason, **extra}


def _age(born: date, today: date) -> int:
    return today.year - born.year - ((today.month, today.day) < (born.month, born.day))


async def missing(session: AsyncSession, *, tenant_id: str, customer_id: str) -> list[dict[str, Any]]:
    """What the customer still lacks for a verification, as the errors of a RESOLVE_ERRORS verification
    (empty when nothing is missing)."""
    row = await customers_service.load_active(session, tenant_id=tenant_id, customer_id=customer_id)
    return await _missing(session, tenant_id=tenant_id, row=row)


async def _missing(session: AsyncSession, *, tenant_id: str, row: Any) -> list[dict[str, Any]]:
    customer = customers_service.to_schema(row).to_api()
    needed, extra = requirements.for_customer(
        row.customer_type, list(row.currencies), entity_type=(row.business_info or {}).get("entity_type")
    )
    errors: list[dict[str, Any]] = []
    named: set[str] = set()
    for field in (*needed.fields, *extra):
        if field.path not in named and _value(customer, field.path) in (None, ""):
            named.add(field.path)
            errors.append(_error(row.id, "MISSING_FIELD", f"{field.label} is required", field=field.path))
    for api_field in customers_service.provider_fields_missing(row):
        path = f"customer.{api_field}"
        if not any(path == n or n.startswith(f"{path}.") for n in named):
            named.add(path)
            label = requirements.LABELS.get(path, api_field)
            errors.append(_error(row.id, "MISSING_FIELD", f"{label} is required by the provider", field=path))
    born = customer.get("birthDate")
    if (
        needed.min_age_years
        and born
        and _age(date.fromisoformat(born), clock.now().date()) < needed.min_age_years
    ):
        errors.append(
            _error(
                row.id,
                "INVALID_FIELD",
                f"the customer must be at least {needed.min_age_years} years old",
                field="customer.birthDate",
            )
        )
    held = {
        (d.holder_id, d.document_type)
        for d in await repository.documents_of_customer(session, tenant_id=tenant_id, customer_id=row.id)
    }
    errors += _missing_documents(row.id, needed.documents, held)
    if needed.min_beneficial_owners:
        owners = await repository.owners_of(session, tenant_id=tenant_id, customer_id=row.id)
        if len(owners) < needed.min_beneficial_owners:
            errors.append(
                _error(
                    row.id,
                    "MISSING_BENEFICIAL_OWNER",
                    "add the business's beneficial owners and a control person (POST /beneficial-owners)",
                )
            )
        elif not any(requirements.CONTROL_ROLES & set(owner.roles) for owner in owners):
            errors.append(
                _error(
                    row.id,
                    "MISSING_CONTROL_PERSON",
                    "none of the business's beneficial owners controls it: add one, or give one a control "
                    f"role ({', '.join(sorted(requirements.CONTROL_ROLES))})",
                )
            )
        for owner in owners:
            errors += _missing_documents(owner.id, needed.owner_documents, held)
    return errors


def _missing_documents(
    holder_id: str, needed: tuple[requirements.DocumentRequirement, ...], held: set[tuple[str, str]]
) -> list[dict[str, Any]]:
    return [
        _error(
            holder_id,
            requirement.error_type,
            f"{requirement.label} is required",
            acceptedDocumentTypes=list(requirement.accepted),
        )
        for requirement in needed
        if not any((holder_id, accepted) in held for accepted in requirement.accepted)
    ]


async def _emit(session: AsyncSession, row: VerificationRow) -> Verification:
    verification = to_schema(row)
    await events_service.emit(
        session, tenant_id=row.tenant_id, type=f"VERIFICATION.{row.status}", resource=verification
    )
    return verification


async def _create(
    session: AsyncSession, *, tenant_id: str, customer_id: str, status: VerificationStatus, errors: list[Any]
) -> VerificationRow:
    now = clock.now()
    row = VerificationRow(
        id=new_id("Verification"),
        tenant_id=tenant_id,
        customer_id=customer_id,
        status=status,
        errors=errors,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def submit(session: AsyncSession, *, tenant_id: str, customer_id: str) -> Verification:
    """POST /verifications."""
    # The customer's row, locked: two submissions of one customer take turns.
    customer = await customers_service.load_active(
        session, tenant_id=tenant_id, customer_id=customer_id, for_update=True
    )
    latest = await repository.latest_verification(
        session, tenant_id=tenant_id, customer_id=customer_id, for_update=True
    )
    if latest is not None and latest.status in UNDER_REVIEW:
        return to_schema(latest)
    if customer.kyc_status in (KycStatus.APPROVED, KycStatus.REJECTED):
        # Decided already (a regulated platform's customer, or an earlier review): said as it is.
        if latest is not None and latest.status == customer.kyc_status:
            return to_schema(latest)
        decided = await _create(
            session,
            tenant_id=tenant_id,
            customer_id=customer_id,
            status=VerificationStatus(customer.kyc_status),
            errors=[],
        )
        return await _emit(session, decided)
    errors = await _missing(session, tenant_id=tenant_id, row=customer)
    if not errors:
        errors = await _screened(session, tenant_id=tenant_id, customer=customer)
    now = clock.now()
    if errors:
        if latest is not None and latest.status == VerificationStatus.RESOLVE_ERRORS:
            latest.status = VERIFICATION.move(
                latest.status, VerificationStatus.RESOLVE_ERRORS, subject=latest.id
            )
            if latest.errors == errors:
                return to_schema(latest)
            latest.errors = errors
            latest.updated_at = now
            await session.flush()
            return await _emit(session, latest)
        row = await _create(
            session,
            tenant_id=tenant_id,
            customer_id=customer_id,
            status=VerificationStatus.RESOLVE_ERRORS,
            errors=errors,
        )
        return await _emit(session, row)
    if latest is not None and latest.status == VerificationStatus.RESOLVE_ERRORS:
        row = latest
        row.status = VERIFICATION.move(row.status, VerificationStatus.IN_PROGRESS, subject=row.id)
        row.errors = []
        row.updated_at = now
        await session.flush()
    else:
        row = await _create(
            session,
            tenant_id=tenant_id,
            customer_id=customer_id,
            status=VerificationStatus.IN_PROGRESS,
            errors=[],
        )
    await repository.mark_submitted(
        session, tenant_id=tenant_id, customer_id=customer_id, verification_id=row.id
    )
    await customers_service.move_kyc_status(
        session, tenant_id=tenant_id, customer_id=customer_id, status=KycStatus.PENDING
    )
    await jobs_service.enqueue(
        session, REVIEW_JOB, {"verificationId": row.id}, tenant_id=tenant_id, dedupe_key=f"review:{row.id}"
    )
    return await _emit(session, row)


async def get(session: AsyncSession, *, tenant_id: str, verification_id: str) -> Verification:
    row = await repository.get_verification(session, tenant_id=tenant_id, verification_id=verification_id)
    if row is None:
        raise VerificationNotFound(verification_id)
    return to_schema(row)


async def list_page(
    session: AsyncSession,
    *,
    tenant_id: str,
    params: PageParams,
    customer_id: str | None,
    status: str | None,
) -> PageResult[VerificationRow]:
    stmt = repository.verifications_query(tenant_id=tenant_id, customer_id=customer_id, status=status)
    return await paginate(session, stmt, id_column=VerificationRow.id, params=params)


async def _customer_subject(session: AsyncSession, *, tenant_id: str, customer: Any) -> ReviewSubject:
    info = customer.business_info or {}
    documents = [
        d
        for d in await repository.documents_of_customer(session, tenant_id=tenant_id, customer_id=customer.id)
        if d.holder_id == customer.id
    ]
    return ReviewSubject(
        kind=customer.customer_type,
        id=customer.id,
        platform_customer_id=customer.platform_customer_id,
        email=customer.email,
        full_name=customer.full_name or info.get("legal_name"),
        registration_number=info.get("registration_number"),
        country=(customer.address or {}).get("country"),
        document_keys=tuple(d.storage_key for d in documents),
        documents=tuple((d.id, d.document_type) for d in documents),
    )


async def _screened(session: AsyncSession, *, tenant_id: str, customer: Any) -> list[dict[str, Any]]:
    """What the KYC provider's screening of a complete submission finds, as verification errors."""
    provider = provider_for(is_sandbox=await tenants_service.is_sandbox(session, tenant_id=tenant_id))
    subject = await _customer_subject(session, tenant_id=tenant_id, customer=customer)
    return [_error(f.resource_id, f.type, f.reason) for f in await provider.screen(subject)]


# ---- the review (jobs.py runs it: subjects read in one transaction, the provider asked outside any, the
# outcome recorded in another)


def owner_subject(owner: BeneficialOwnerRow) -> ReviewSubject:
    info = owner.personal_info
    return ReviewSubject(
        kind="BENEFICIAL_OWNER",
        id=owner.id,
        full_name=" ".join(p for p in (info.get("firstName"), info.get("lastName")) if p),
        last_name=info.get("lastName"),
        country=info.get("nationality"),
    )


async def review_subjects(
    session: AsyncSession, *, tenant_id: str, verification_id: str
) -> list[ReviewSubject]:
    """Who the review of a verification in progress asks about: the customer, then each of its beneficial
    owners still pending; nothing when the verification is no longer in progress."""
    row = await repository.get_verification(session, tenant_id=tenant_id, verification_id=verification_id)
    if row is None or row.status != VerificationStatus.IN_PROGRESS:
        return []
    customer = await customers_service.load(session, tenant_id=tenant_id, customer_id=row.customer_id)
    subjects = [await _customer_subject(session, tenant_id=tenant_id, customer=customer)]
    owners = await repository.owners_of(session, tenant_id=tenant_id, customer_id=customer.id)
    subjects += [owner_subject(o) for o in owners if o.kyc_status == OwnerKycStatus.PENDING]
    return subjects


async def record_review(
    session: AsyncSession, *, tenant_id: str, verification_id: str, decisions: dict[str, Decision]
) -> None:
    """The provider's decisions (by subject id) applied: owners' statuses, then the verification's and
    the customer's. Nothing happens to a verification no longer in progress (a repeated job).

    Locks in the order every writer of a verification's outcome takes them (decide, the sandbox's
    override): the customer, then the verification (read again once locked), then its owners; the other
    order could deadlock with a decision made at the same moment."""
    found = await repository.get_verification(session, tenant_id=tenant_id, verification_id=verification_id)
    if found is None:
        return
    await customers_service.load(session, tenant_id=tenant_id, customer_id=found.customer_id, for_update=True)
    row = await repository.get_verification(
        session, tenant_id=tenant_id, verification_id=verification_id, for_update=True, refresh=True
    )
    if row is None or row.status != VerificationStatus.IN_PROGRESS or row.customer_id not in decisions:
        return
    now = clock.now()
    rejected = [row.customer_id] if decisions[row.customer_id] == Decision.REJECTED else []
    waiting = decisions[row.customer_id] == Decision.MANUAL_REVIEW
    for owner in await repository.owners_of(
        session, tenant_id=tenant_id, customer_id=row.customer_id, for_update=True
    ):
        decision = decisions.get(owner.id)
        if decision is not None and owner.kyc_status == OwnerKycStatus.PENDING:
            owner.kyc_status = OWNER_KYC.move(owner.kyc_status, _OWNER_STATUS[decision], subject=owner.id)
            owner.updated_at = now
        if owner.kyc_status == OwnerKycStatus.REJECTED:
            rejected.append(owner.id)
        elif owner.kyc_status == OwnerKycStatus.PENDING:
            waiting = True
    if rejected:
        status = VerificationStatus.REJECTED
        errors: list[dict[str, Any]] | None = _rejections(rejected, PROVIDER_REJECTION)
    elif waiting:
        status, errors = VerificationStatus.PENDING_MANUAL_REVIEW, None
    else:
        status, errors = VerificationStatus.APPROVED, None
    await _conclude(session, row, status=status, errors=errors)


async def is_under_review(session: AsyncSession, *, tenant_id: str, verification_id: str | None) -> bool:
    if verification_id is None:
        return False
    row = await repository.get_verification(session, tenant_id=tenant_id, verification_id=verification_id)
    return row is not None and row.status in UNDER_REVIEW


@customers_hooks.on_kyc_decided.subscribe
async def decided_by_hand(session: AsyncSession, *, tenant_id: str, customer_id: str, status: str) -> None:
    """The sandbox's override decided the customer: its verification under review (waiting for a manual
    review, typically) ends the same way."""
    latest = await repository.latest_verification(
        session, tenant_id=tenant_id, customer_id=customer_id, for_update=True
    )
    if latest is None or latest.status not in UNDER_REVIEW:
        return
    decided = VerificationStatus(status)
    errors = (
        _rejections([customer_id], PROVIDER_REJECTION) if decided == VerificationStatus.REJECTED else None
    )
    await _conclude(session, latest, status=decided, errors=errors)


# ---- the one way an outcome is recorded: the provider's review, the sandbox's override and a person's
# decision (decide) all end here, so they move the same machine, emit the same events and leave the
# customer the same way


def _rejections(subjects: list[str], reason: str) -> list[dict[str, Any]]:
    return [_error(subject, "APPLICANT_REJECTED", reason) for subject in subjects]


async def _conclude(
    session: AsyncSession,
    row: VerificationRow,
    *,
    status: VerificationStatus,
    errors: list[dict[str, Any]] | None,
) -> Verification:
    """Move the verification (locked by the caller) to the review's outcome, with the errors of a rejection
    (None keeps its errors), emit VERIFICATION.<STATUS>, then move a customer still PENDING to the outcome
    (CUSTOMER.KYC_/KYB_<STATUS>). A customer decided otherwise meanwhile (the sandbox's override, which has
    already moved it when it calls this) keeps its status; a verification left to a person moves no
    customer."""
    row.status = VERIFICATION.move(row.status, status, subject=row.id)
    if errors is not None:
        row.errors = errors
    row.updated_at = clock.now()
    await session.flush()
    verification = await _emit(session, row)
    if status != VerificationStatus.PENDING_MANUAL_REVIEW:
        customer = await customers_service.load(
            session, tenant_id=row.tenant_id, customer_id=row.customer_id, for_update=True
        )
        if customer.kyc_status == KycStatus.PENDING:
            await customers_service.move_kyc_status(
                session, tenant_id=row.tenant_id, customer_id=row.customer_id, status=KycStatus(status)
            )
    return verification


DECISIONS = (VerificationStatus.APPROVED, VerificationStatus.REJECTED)


async def decide(
    session: AsyncSession,
    *,
    tenant_id: str,
    verification_id: str,
    decision: str,
    reason: str | None,
    actor: str,
) -> Verification:
    """A person's decision of a verification waiting in PENDING_MANUAL_REVIEW (POST
    /verifications/{id}/decision): APPROVED or REJECTED (a rejection's reason is the APPLICANT_REJECTED
    error's), recorded as the provider's would be (_conclude), with who decided (`actor`, a token id) and
    why. The row is read FOR UPDATE (its customer's first), so of two concurrent decisions the second waits,
    then finds it decided and is refused (VerificationNotAwaitingReview) with nothing changed twice."""
    # The API's request model refuses these first; a caller without one (the web console) hears it alike.
    if decision not in DECISIONS:
        raise _refused("decision", "one of APPROVED, REJECTED")
    outcome = VerificationStatus(decision)
    if outcome == VerificationStatus.REJECTED and not reason:
        raise _refused("reason", "a REJECTED decision needs its reason")
    # The customer is locked before the verification, in the order the sandbox's override locks them
    # (customers first, then its hook here), so the two cannot deadlock.
    found = await repository.get_verification(session, tenant_id=tenant_id, verification_id=verification_id)
    if found is None:
        raise VerificationNotFound(verification_id)
    await customers_service.load(session, tenant_id=tenant_id, customer_id=found.customer_id, for_update=True)
    # Locked and read again (refresh): the status as the decision that held the lock before us left it.
    row = await repository.get_verification(
        session, tenant_id=tenant_id, verification_id=verification_id, for_update=True, refresh=True
    )
    if row is None:
        raise VerificationNotFound(verification_id)
    if row.status != VerificationStatus.PENDING_MANUAL_REVIEW:
        raise VerificationNotAwaitingReview(row.id, row.status)
    row.decided_by = actor
    row.decision_reason = reason
    errors = (
        _rejections([row.customer_id], reason or PROVIDER_REJECTION)
        if outcome == VerificationStatus.REJECTED
        else None
    )
    return await _conclude(session, row, status=outcome, errors=errors)


def _refused(field: str, message: str) -> InvalidInput:
    return InvalidInput(f"{field}: {message}", details={"fields": [{"field": field, "message": message}]})


async def count_awaiting_review(session: AsyncSession, *, tenant_id: str) -> int:
    """How many of the tenant's verifications wait for a person (PENDING_MANUAL_REVIEW)."""
    return await repository.count_verifications(
        session, tenant_id=tenant_id, status=VerificationStatus.PENDING_MANUAL_REVIEW
    )
