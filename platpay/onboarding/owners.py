"""Beneficial owners of business customers (SPEC §4.5, INTERFACE-FACTS §3.10): create, read, list, partial
update. Each owner is reviewed on their own (KYC, by the same provider as verifications) when added and
whenever their personal information changes; a business's verification counts their outcome
(verifications.py). The owners of one business hold at most 100 % between them. Business customers show
their owners (customers.hooks.business_owners)."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers import hooks as customers_hooks
from platpay.customers import service as customers_service
from platpay.errors import InvalidInput
from platpay.jobs import service as jobs_service
from platpay.kit import clock, countries
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.onboarding import repository
from platpay.onboarding.errors import BeneficialOwnerNotFound, NotABusiness
from platpay.onboarding.models import BeneficialOwnerRow
from platpay.onboarding.schemas import BeneficialOwner, BeneficialOwnerPersonalInfo
from platpay.onboarding.state import OWNER_KYC, OwnerKycStatus

REVIEW_OWNER_JOB = "onboarding.review_owner"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_NAME_PUNCTUATION = set(" -'’.")


def to_schema(row: BeneficialOwnerRow) -> BeneficialOwner:
    return BeneficialOwner(
        id=row.id,
        customer_id=row.customer_id,
        roles=list(row.roles),
        ownership_percentage=row.ownership_percentage,
        personal_info=BeneficialOwnerPersonalInfo.model_validate(row.personal_info),
        kyc_status=row.kyc_status,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _refuse(problems: list[tuple[str, str]]) -> InvalidInput:
    fields = [{"field": field, "message": message} for field, message in problems]
    summary = "; ".join(f"{field}: {message}" for field, message in problems)
    return InvalidInput(f"invalid input: {summary}", details={"fields": fields})


def _name_ok(value: str) -> bool:
    return (
        value == value.strip()
        and "  " not in value
        and value[:1].isalpha()
        # digits too: the sandbox reads its magic suffixes from lastName (INTERFACE-FACTS §7)
        and all(ch.isalnum() or ch in _NAME_PUNCTUATION for ch in value)
    )


def info_problems(info: dict[str, Any], *, today: date, field: str = "personalInfo") -> list[tuple[str, str]]:
    """The rules beyond the schema's on an owner's personal information (API names, JSON values): names,
    a real past birth date, country codes, an email address. Used on create, update and the hosted page."""
    problems: list[tuple[str, str]] = []
    for key in ("firstName", "middleName", "lastName"):
        value = info.get(key)
        if value is not None and not _name_ok(value):
            problems.append(
                (
                    f"{field}.{key}",
                    "must start with a letter: letters, digits, single spaces, hyphens, apostrophes, periods",
                )
            )
    born = info.get("birthDate")
    if born is not None:
        try:
            parsed = date.fromisoformat(born)
        except ValueError:
            problems.append((f"{field}.birthDate", f"{born!r} is not a real calendar date (YYYY-MM-DD)"))
        else:
            if parsed >= today or parsed.year < 1900:
                problems.append((f"{field}.birthDate", f"{born} must be a past date after 1900"))
    for key in ("nationality", "countryOfIssuance"):
        value = info.get(key)
        if value is not None and not countries.is_country(value):
            problems.append((f"{field}.{key}", f"{value!r} is not an ISO 3166-1 alpha-2 country code"))
    country = (info.get("address") or {}).get("country")
    if country is not None and not countries.is_country(country):
        problems.append(
            (f"{field}.address.country", f"{country!r} is not an ISO 3166-1 alpha-2 country code")
        )
    email = info.get("email")
    if email is not None and not _EMAIL.match(email):
        problems.append((f"{field}.email", f"{email!r} is not a valid email address"))
    return problems


@customers_hooks.business_owners.subscribe
async def of_businesses(
    session: AsyncSession, *, tenant_id: str, customer_ids: list[str]
) -> dict[str, list[BeneficialOwner]]:
    """customers.hooks.business_owners: what a business customer shows as its beneficialOwners."""
    found: dict[str, list[BeneficialOwner]] = {}
    for row in await repository.owners_of_many(session, tenant_id=tenant_id, customer_ids=customer_ids):
        found.setdefault(row.customer_id, []).append(to_schema(row))
    return found


async def _business(session: AsyncSession, *, tenant_id: str, customer_id: str) -> Any:
    customer = await customers_service.load_active(
        session, tenant_id=tenant_id, customer_id=customer_id, for_update=True
    )
    if customer.customer_type != "BUSINESS":
        raise NotABusiness(
            "customerId: beneficial owners belong to BUSINESS customers",
            details={"fields": [{"field": "customerId", "message": "is not a BUSINESS customer"}]},
        )
    return customer


def _share_problem(
    owners: list[BeneficialOwnerRow], *, adding: int, except_id: str | None = None
) -> list[tuple[str, str]]:
    held = sum(o.ownership_percentage for o in owners if o.id != except_id)
    if held + adding > 100:
        return [
            (
                "ownershipPercentage",
                f"the business's owners would hold {held + adding} % (at most 100; others hold {held} %)",
            )
        ]
    return []


async def _queue_review(session: AsyncSession, row: BeneficialOwnerRow) -> None:
    await jobs_service.enqueue(
        session,
        REVIEW_OWNER_JOB,
        {"beneficialOwnerId": row.id, "version": row.updated_at.isoformat()},
        tenant_id=row.tenant_id,
    )


async def create(
    session: AsyncSession,
    *,
    tenant_id: str,
    customer_id: str,
    roles: list[str],
    ownership_percentage: int,
    personal_info: dict[str, Any],
) -> BeneficialOwner:
    """POST /beneficial-owners: `personal_info` in API names and JSON values."""
    await _business(session, tenant_id=tenant_id, customer_id=customer_id)
    owners = await repository.owners_of(session, tenant_id=tenant_id, customer_id=customer_id)
    problems = info_problems(personal_info, today=clock.now().date())
    problems += _share_problem(owners, adding=ownership_percentage)
    if len(set(roles)) != len(roles):
        problems.append(("roles", "a role is listed twice"))
    if problems:
        raise _refuse(problems)
    now = clock.now()
    row = BeneficialOwnerRow(
        id=new_id("BeneficialOwner"),
        tenant_id=tenant_id,
        customer_id=customer_id,
        roles=roles,
        ownership_percentage=ownership_percentage,
        personal_info=personal_info,
        kyc_status=OwnerKycStatus.PENDING,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    await _queue_review(session, row)
    return to_schema(row)


async def load(
    session: AsyncSession, *, tenant_id: str, owner_id: str, for_update: bool = False
) -> BeneficialOwnerRow:
    row = await repository.get_owner(session, tenant_id=tenant_id, owner_id=owner_id, for_update=for_update)
    if row is None:
        raise BeneficialOwnerNotFound(owner_id)
    return row


async def get(session: AsyncSession, *, tenant_id: str, owner_id: str) -> BeneficialOwner:
    return to_schema(await load(session, tenant_id=tenant_id, owner_id=owner_id))


async def list_page(
    session: AsyncSession, *, tenant_id: str, customer_id: str, params: PageParams
) -> PageResult[BeneficialOwnerRow]:
    # An unknown (or another tenant's) customer: 404, as for its other resources.
    await customers_service.load(session, tenant_id=tenant_id, customer_id=customer_id)
    stmt = repository.owners_query(tenant_id=tenant_id, customer_id=customer_id)
    return await paginate(session, stmt, id_column=BeneficialOwnerRow.id, params=params)


async def update(
    session: AsyncSession,
    *,
    tenant_id: str,
    owner_id: str,
    roles: list[str] | None,
    ownership_percentage: int | None,
    personal_info: dict[str, Any] | None,
) -> BeneficialOwner:
    """PATCH /beneficial-owners/{id}: the fields given replace the stored ones (personalInfo field by
    field). Changed personal information sends the owner back to review."""
    row = await load(session, tenant_id=tenant_id, owner_id=owner_id, for_update=True)
    await _business(session, tenant_id=tenant_id, customer_id=row.customer_id)
    problems: list[tuple[str, str]] = []
    if personal_info:
        problems += info_problems(personal_info, today=clock.now().date())
    if ownership_percentage is not None:
        owners = await repository.owners_of(session, tenant_id=tenant_id, customer_id=row.customer_id)
        problems += _share_problem(owners, adding=ownership_percentage, except_id=row.id)
    if roles is not None and len(set(roles)) != len(roles):
        problems.append(("roles", "a role is listed twice"))
    if problems:
        raise _refuse(problems)
    now = clock.now()
    if roles is not None:
        row.roles = roles
    if ownership_percentage is not None:
        row.ownership_percentage = ownership_percentage
    changed_identity = False
    if personal_info:
        merged = {**row.personal_info, **personal_info}
        changed_identity = merged != row.personal_info
        row.personal_info = merged
    row.updated_at = now
    if changed_identity:
        row.kyc_status = OWNER_KYC.move(row.kyc_status, OwnerKycStatus.PENDING, subject=row.id)
    await session.flush()
    if changed_identity:
        await _queue_review(session, row)
    return to_schema(row)


async def review_subject_of(
    session: AsyncSession, *, tenant_id: str, owner_id: str, version: str
) -> BeneficialOwnerRow | None:
    """The owner to review, if still pending and unchanged since the review was queued."""
    row = await repository.get_owner(session, tenant_id=tenant_id, owner_id=owner_id)
    if row is None or row.kyc_status != OwnerKycStatus.PENDING or row.updated_at.isoformat() != version:
        return None
    return row


async def record_review(
    session: AsyncSession, *, tenant_id: str, owner_id: str, version: str, status: OwnerKycStatus
) -> None:
    row = await repository.get_owner(session, tenant_id=tenant_id, owner_id=owner_id, for_update=True)
    if row is None or row.kyc_status != OwnerKycStatus.PENDING or row.updated_at.isoformat() != version:
        return
    if status != OwnerKycStatus.PENDING:
        row.kyc_status = OWNER_KYC.move(row.kyc_status, status, subject=row.id)
        row.updated_at = clock.now()
        await session.flush()
