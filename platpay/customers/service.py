"""Customers: create (one or many: the API and the bulk import share one path), read, update, delete,
KYC status changes with their events, and the provider-requirement check money movement calls. What a draft
may hold (the rules of a create body and of a PATCH) is customers/drafts.py."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import to_jsonable_python
from sqlalchemy import Select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import ColumnElement

from platpay.config import Settings
from platpay.customers import drafts as customer_drafts
from platpay.customers import hooks, identity, repository, sandbox
from platpay.customers import validators as v
from platpay.customers.contact import rules as contact
from platpay.customers.errors import (
    CustomerDeleted,
    CustomerNotFound,
    CustomerNotReady,
    EndUserTermsNotAccepted,
    PlatformCustomerIdExists,
    UmaAddressExists,
)
from platpay.customers.models import CustomerRow
from platpay.customers.schemas import (
    Address,
    BeneficialOwner,
    BusinessCustomer,
    BusinessInfoResponse,
    Customer,
    EndUserTerms,
    EndUserTermsConsent,
    IndividualCustomer,
)
from platpay.customers.state import BLOCKED, KYC, KycStatus, initial_status
from platpay.customers.types import CustomerDraft
from platpay.errors import ApiError, InvalidInput
from platpay.events import service as events_service
from platpay.kit import clock
from platpay.kit.ids import new_id, uuid7
from platpay.kit.pagination import PageParams, PageResult, paginate, paginate_uncounted
from platpay.kit.wallet_signature import SignedRequestChallenge, WalletSignature
from platpay.tenants.context import TenantContext

KYC_EVENT_STATUSES = (KycStatus.PENDING, KycStatus.APPROVED, KycStatus.REJECTED)
# What the sandbox's override may set: a review's outcomes, and a hold (which has no webhook of its own in
# the reference: the customer is read, or learns of it when refused).
OVERRIDE_STATUSES = (*KYC_EVENT_STATUSES, KycStatus.HOLD)


@dataclass
class Outcome:
    """One customer of a batch: the inserted row values, or why it was refused."""

    row: dict[str, Any] | None = None
    problems: list[v.Problem] = field(default_factory=list)


def end_user_terms(settings: Settings) -> EndUserTerms:
    """GET /customers/end-user-terms: the current version (PLATPAY_END_USER_TERMS_VERSION) and where it is
    read (PLATPAY_END_USER_TERMS_URL, else platpay's own page)."""
    version = settings.end_user_terms_version
    url = settings.end_user_terms_url or f"{settings.base_url().rstrip('/')}{TERMS_PAGE_PATH}/{version}"
    return EndUserTerms(version=version, url=url)


TERMS_PAGE_PATH = "/end-user-terms"


def _generated_uma(tenant: TenantContext) -> str:
    return f"${secrets.token_hex(6)}@{tenant.uma_domain}"


async def create_many(
    session: AsyncSession, *, tenant: TenantContext, drafts: list[CustomerDraft], settings: Settings
) -> list[Outcome]:
    """Validate and insert customers (and, through hooks.on_created, their internal accounts) as one batch;
    refused drafts are reported, not raised, so a bulk import can record them per row while the rest are
    created."""
    created_hooks = hooks.on_created.subscribers()
    now = clock.now()
    today = now.date()
    outcomes: list[Outcome] = []
    for draft in drafts:
        if draft.get("customer_type") not in ("INDIVIDUAL", "BUSINESS"):
            outcomes.append(
                Outcome(problems=[v.Problem("customerType", "is required: INDIVIDUAL or BUSINESS")])
            )
            continue
        values, problems = customer_drafts.create_problems(
            draft, tenant=tenant, today=today, customer_type=draft["customer_type"], settings=settings
        )
        if problems:
            outcomes.append(Outcome(problems=problems))
            continue
        customer_id = new_id("Customer")
        individual = draft["customer_type"] == "INDIVIDUAL"
        identifier = values.get("identifier")
        row = {
            "id": customer_id,
            "tenant_id": tenant.id,
            "customer_type": draft["customer_type"],
            "platform_customer_id": values.get("platform_customer_id") or uuid7().hex,
            "uma_address": values.get("uma_address") or _generated_uma(tenant),
            "kyc_status": initial_status(
                is_regulated=tenant.is_regulated,
                customer_type=draft["customer_type"],
                sandbox_outcome=sandbox.outcome_at_creation(values.get("full_name"))
                if tenant.is_sandbox and individual
                else None,
            ),
            "region": values.get("region"),
            "currencies": values.get("currencies") or list(tenant.currency_codes),
            "email": values.get("email"),
            "full_name": values.get("full_name"),
            "birth_date": values.get("birth_date"),
            "nationality": values.get("nationality"),
            "address": values.get("address"),
            "business_info": customer_drafts.jsonable(values.get("business_info")),
            "phone_number": values.get("phone_number"),
            "id_type": values.get("id_type"),
            "identifier_sealed": identity.seal_identifier(customer_id, identifier) if identifier else None,
            "country_of_issuance": values.get("country_of_issuance"),
            "due_diligence": values.get("due_diligence"),
            "end_user_terms_consent": values.get("end_user_terms_consent"),
            "verified_contacts": None,
            "created_at": now,
            "updated_at": now,
            "deleted_at": None,
        }
        outcomes.append(Outcome(row=row))

    await _refuse_duplicates(session, tenant=tenant, outcomes=outcomes)
    rows = [o.row for o in outcomes if o.row is not None]
    await repository.insert_many(session, rows)
    for on_created in created_hooks:
        await on_created(
            session,
            tenant_id=tenant.id,
            customer_ids=[r["id"] for r in rows],
            currency_codes=tenant.currency_codes,
        )
    return outcomes


async def _refuse_duplicates(
    session: AsyncSession, *, tenant: TenantContext, outcomes: list[Outcome]
) -> None:
    live = [o for o in outcomes if o.row is not None]
    taken_ids, taken_umas = await repository.taken_keys(
        session,
        tenant_id=tenant.id,
        platform_customer_ids=[o.row["platform_customer_id"] for o in live],  # type: ignore[index]
        uma_addresses=[o.row["uma_address"] for o in live],  # type: ignore[index]
    )
    for outcome in live:
        row = outcome.row
        assert row is not None
        problems = []
        if row["platform_customer_id"] in taken_ids:
            problems.append(
                v.Problem(
                    "platformCustomerId",
                    f"{row['platform_customer_id']!r} belongs to another active customer",
                    error=PlatformCustomerIdExists,
                )
            )
        if row["uma_address"] in taken_umas:
            problems.append(
                v.Problem("umaAddress", f"{row['uma_address']} is already taken", error=UmaAddressExists)
            )
        if problems:
            outcome.row, outcome.problems = None, problems
        else:
            taken_ids.add(row["platform_customer_id"])  # later rows of the same batch collide with this one
            taken_umas.add(row["uma_address"])


def _duplicate_error(error: IntegrityError) -> ApiError:
    message = str(error.orig)
    if "uma" in message:
        return UmaAddressExists(
            "umaAddress: already taken",
            details={"fields": [{"field": "umaAddress", "message": "already taken"}]},
        )
    return PlatformCustomerIdExists(
        "platformCustomerId: belongs to another active customer",
        details={
            "fields": [{"field": "platformCustomerId", "message": "belongs to another active customer"}]
        },
    )


async def create_customer(
    session: AsyncSession, *, tenant: TenantContext, draft: CustomerDraft, settings: Settings
) -> Customer:
    """POST /customers: one customer from the fields `draft` gives (see customers/types.py)."""
    try:
        [outcome] = await create_many(session, tenant=tenant, drafts=[draft], settings=settings)
    except IntegrityError as error:  # a concurrent create took the same unique value between check and insert
        # Raising rolls the transaction (or the idempotency savepoint around it) back, so no own savepoint.
        raise _duplicate_error(error) from None
    if outcome.row is None:
        raise customer_drafts.refusal(outcome.problems)
    return to_schema_from_values(outcome.row)


def to_schema_from_values(row: dict[str, Any]) -> Customer:
    """A customer just created, as the API shows it (a new business has no beneficial owners yet)."""
    return to_schema(CustomerRow(**row), beneficial_owners=[])


async def render(session: AsyncSession, row: CustomerRow) -> Customer:
    """The customer as the API (and its webhooks) show it, with what domains above add (a business's
    beneficial owners, hooks.business_owners)."""
    [customer] = await render_many(session, [row])
    return customer


async def render_many(session: AsyncSession, rows: Sequence[CustomerRow]) -> list[Customer]:
    """`render` for a page of customers: one beneficial-owner query per tenant (a page has one), not one
    per customer."""
    businesses: dict[str, list[str]] = {}
    for row in rows:
        if row.customer_type == "BUSINESS":
            businesses.setdefault(row.tenant_id, []).append(row.id)
    owners: dict[str, list[BeneficialOwner]] = {}
    if businesses:
        subscribers = hooks.business_owners.subscribers()
        for tenant_id, customer_ids in businesses.items():
            for business_owners in subscribers:
                found = await business_owners(session, tenant_id=tenant_id, customer_ids=customer_ids)
                for customer_id, listed in found.items():
                    owners.setdefault(customer_id, []).extend(listed)
    return [to_schema(row, beneficial_owners=owners.get(row.id, [])) for row in rows]


def to_schema(row: CustomerRow, *, beneficial_owners: list[BeneficialOwner] | None = None) -> Customer:
    """The row as the API shows it: an IndividualCustomer or a BusinessCustomer, by its type (the other
    type's fields are never stored: creates and updates refuse them). A business's `beneficial_owners`
    come from onboarding: `render` fetches them; None leaves them out (internal reads only)."""
    common: dict[str, Any] = {
        "id": row.id,
        "platform_customer_id": row.platform_customer_id,
        "uma_address": row.uma_address,
        "kyc_status": row.kyc_status,
        "region": row.region,
        "currencies": list(row.currencies),
        "email": row.email,
        "phone_number": row.phone_number,
        "address": Address.model_validate(row.address, by_name=True) if row.address else None,
        "end_user_terms_consent": EndUserTermsConsent.model_validate(row.end_user_terms_consent)
        if row.end_user_terms_consent
        else None,
        "is_deleted": row.deleted_at is not None,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "contact_verification": contact.view(
            currencies=row.currencies,
            verified_contacts=row.verified_contacts,
            email=row.email,
            phone_number=row.phone_number,
        ),
    }
    if row.customer_type == "BUSINESS":
        info = row.business_info
        return BusinessCustomer(
            customer_type="BUSINESS",
            kyb_status=row.kyc_status,  # the same status, under the reference's name for businesses
            business_info=BusinessInfoResponse(**info) if info else None,
            **({} if beneficial_owners is None else {"beneficial_owners": beneficial_owners}),
            **common,
        )
    # The identifier is write-only: only its kind (idType) and issuing country are shown.
    return IndividualCustomer(
        customer_type="INDIVIDUAL",
        full_name=row.full_name,
        birth_date=row.birth_date,
        nationality=row.nationality,
        id_type=row.id_type,
        country_of_issuance=row.country_of_issuance,
        **(row.due_diligence or {}),
        **common,
    )


def _found(row: CustomerRow | None, customer_id: str) -> CustomerRow:
    if row is None:
        raise CustomerNotFound(customer_id)
    return row


def _active(row: CustomerRow) -> CustomerRow:
    if row.deleted_at is not None:
        raise CustomerDeleted(f"customer {row.id!r} was deleted", details={"customerId": row.id})
    return row


async def load(
    session: AsyncSession, *, tenant_id: str, customer_id: str, for_update: bool = False
) -> CustomerRow:
    row = await repository.get(session, tenant_id=tenant_id, customer_id=customer_id, for_update=for_update)
    return _found(row, customer_id)


async def load_active(
    session: AsyncSession, *, tenant_id: str, customer_id: str, for_update: bool = False
) -> CustomerRow:
    return _active(await load(session, tenant_id=tenant_id, customer_id=customer_id, for_update=for_update))


async def find_active(session: AsyncSession, *, tenant_id: str, customer_id: str) -> CustomerRow | None:
    row = await repository.get(session, tenant_id=tenant_id, customer_id=customer_id)
    return row if row is not None and row.deleted_at is None else None


async def get_customer(session: AsyncSession, *, tenant_id: str, customer_id: str) -> Customer:
    return await render(session, await load(session, tenant_id=tenant_id, customer_id=customer_id))


async def list_customers(
    session: AsyncSession, *, tenant_id: str, dialect: str, params: PageParams, **filters: Any
) -> PageResult[CustomerRow]:
    stmt = repository.list_query(tenant_id=tenant_id, dialect=dialect, **filters)
    return await paginate(session, stmt, id_column=CustomerRow.id, params=params)


async def search_customers(
    session: AsyncSession,
    *,
    tenant_id: str,
    query: str,
    params: PageParams,
    kyc_status: str | None = None,
    customer_type: str | None = None,
) -> PageResult[CustomerRow]:
    """A page of the tenant's live customers matching `query` (newest first), in one statement and without
    a total: a case-insensitive substring of the full name, the business's legal or doing-business-as name,
    the email, the platformCustomerId or the UMA address, or exactly the customer's id. `%` and `_` in the
    query match themselves; a blank query matches every live customer. `kyc_status` (KycStatus) and
    `customer_type` (INDIVIDUAL, BUSINESS) narrow the page further (the console's filters). Render the rows
    with `to_schema` (or `render_many` for beneficial owners)."""
    stmt = repository.search_query(
        tenant_id=tenant_id, query=query, kyc_status=kyc_status, customer_type=customer_type
    )
    return await paginate_uncounted(session, stmt, id_column=CustomerRow.id, params=params)


async def update_customer(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    customer_id: str,
    changes: CustomerDraft,
    settings: Settings,
    wallet_signature: WalletSignature | None = None,
) -> Customer | SignedRequestChallenge:
    """PATCH /customers/{id}: set the fields `changes` gives (customer_type required); a field absent keeps
    its value, one given as None is refused (see customers/types.py). A new email is first put to the
    hooks.on_email_changing subscribers (wallets: a customer whose wallets log in by EMAIL_OTP changes it
    only by signed retry): a challenge they answer is returned instead of the customer, nothing changed;
    `wallet_signature` carries the request's signed-retry headers for them."""
    row = await load_active(session, tenant_id=tenant.id, customer_id=customer_id, for_update=True)
    draft: dict[str, Any] = dict(changes)
    values, problems = customer_drafts.update_problems(
        draft,
        row=row,
        tenant=tenant,
        today=clock.now().date(),
        customer_type=draft["customer_type"],
        settings=settings,
    )
    if problems:
        raise customer_drafts.refusal(problems)
    # Taken keys are a conflict (409), reported once the body is otherwise valid, as on create.
    new_pcid, new_uma = values.get("platform_customer_id"), values.get("uma_address")
    new_pcid = None if new_pcid == row.platform_customer_id else new_pcid
    new_uma = None if new_uma == row.uma_address else new_uma
    taken_ids, taken_umas = await repository.taken_keys(
        session,
        tenant_id=tenant.id,
        platform_customer_ids=[new_pcid] if new_pcid is not None else [],
        uma_addresses=[new_uma] if new_uma is not None else [],
    )
    if taken_ids:
        problems.append(
            v.Problem(
                "platformCustomerId",
                f"{new_pcid!r} belongs to another active customer",
                error=PlatformCustomerIdExists,
            )
        )
    if taken_umas:
        problems.append(v.Problem("umaAddress", f"{new_uma} is already taken", error=UmaAddressExists))
    if problems:
        raise customer_drafts.refusal(problems)
    new_email = values.get("email")
    if new_email is not None and new_email != row.email:
        bound = to_jsonable_python(draft)
        if bound.get("identifier") is not None:  # write-only: never in a payloadToSign or a stored challenge
            bound["identifier"] = identity.fingerprint(row.id, bound["identifier"])
        change = hooks.EmailChange(
            tenant=tenant,
            customer_id=row.id,
            old_email=row.email,
            new_email=new_email,
            fields=bound,
            wallet_signature=wallet_signature or WalletSignature(),
        )
        for on_email_changing in hooks.on_email_changing.subscribers():
            challenge = await on_email_changing(session, change=change, settings=settings)
            if challenge is not None:
                return challenge
    identifier = values.pop("identifier", None)
    if identifier is not None:
        row.identifier_sealed = identity.seal_identifier(row.id, identifier)
    for key, value in values.items():
        setattr(row, key, value)
    row.updated_at = clock.now()
    try:
        async with session.begin_nested():
            await session.flush()
    except IntegrityError as error:
        raise _duplicate_error(error) from None
    return await render(session, row)


async def delete_customer(session: AsyncSession, *, tenant_id: str, customer_id: str) -> Customer:
    """Soft delete: the customer leaves lists (unless asked for), its keys are freed, its accounts close
    (hooks.on_deleted)."""
    deleted_hooks = hooks.on_deleted.subscribers()
    row = await load_active(session, tenant_id=tenant_id, customer_id=customer_id, for_update=True)
    for on_deleted in deleted_hooks:
        await on_deleted(session, tenant_id=tenant_id, customer_id=customer_id)
    now = clock.now()
    row.deleted_at = now
    row.updated_at = now
    await session.flush()
    return await render(session, row)


async def set_kyc_status(session: AsyncSession, *, tenant_id: str, customer_id: str, status: str) -> Customer:
    """The sandbox's override (POST /sandbox/customers/{id}/kyc): the outcome a review would reach. A
    customer not under review first enters PENDING, as a submission would (both moves emit); re-entering
    PENDING emits again; setting the status it already has (other than PENDING) changes nothing. A decision
    (APPROVED, REJECTED) ends a verification still under review (hooks.on_kyc_decided: onboarding)."""
    if status not in OVERRIDE_STATUSES:
        raise InvalidInput(
            f"kycStatus must be one of {', '.join(OVERRIDE_STATUSES)}",
            details={"fields": [{"field": "kycStatus", "message": f"one of {', '.join(OVERRIDE_STATUSES)}"}]},
        )
    row = await load_active(session, tenant_id=tenant_id, customer_id=customer_id, for_update=True)
    if row.kyc_status == status and status != KycStatus.PENDING:
        return await render(session, row)
    decided_hooks = hooks.on_kyc_decided.subscribers()
    if not KYC.can_move(row.kyc_status, status):
        await _move_kyc(session, row, KycStatus.PENDING)
    customer = await _move_kyc(session, row, KycStatus(status))
    # A hold decides nothing: a verification under review carries on (its outcome moves only a PENDING
    # customer, onboarding/verifications.py), and a resubmission lifts the hold.
    if status not in (KycStatus.PENDING, KycStatus.HOLD):
        for on_kyc_decided in decided_hooks:
            await on_kyc_decided(session, tenant_id=tenant_id, customer_id=customer_id, status=status)
    return customer


async def move_kyc_status(
    session: AsyncSession, *, tenant_id: str, customer_id: str, status: KycStatus
) -> Customer:
    """Move a customer's kycStatus as a verification does (customers/state.py KYC; an illegal move raises
    IllegalTransition) and emit CUSTOMER.KYC_<STATUS> (KYB_ for businesses) in the same transaction."""
    row = await load_active(session, tenant_id=tenant_id, customer_id=customer_id, for_update=True)
    return await _move_kyc(session, row, status)


async def _move_kyc(session: AsyncSession, row: CustomerRow, status: KycStatus) -> Customer:
    """Move the status and emit CUSTOMER.KYC_<STATUS> (KYB_ for businesses), for the statuses the reference
    has a webhook for (PENDING, APPROVED, REJECTED; none for HOLD)."""
    row.kyc_status = KYC.move(row.kyc_status, status, subject=row.id)
    row.updated_at = clock.now()
    await session.flush()
    customer = await render(session, row)
    if status in KYC_EVENT_STATUSES:
        family = "KYB" if row.customer_type == "BUSINESS" else "KYC"
        await events_service.emit(
            session, tenant_id=row.tenant_id, type=f"CUSTOMER.{family}_{status}", resource=customer
        )
    return customer


def provider_fields_missing(row: CustomerRow) -> list[str]:
    """The fields (API names, dot paths: `address`, `businessInfo.taxId`) that the providers of the
    customer's currencies require (tenants' provider requirements, SPEC §2 rule 1) and it lacks."""
    return [
        p.field
        for p in v.missing_for_currencies(
            customer_drafts.fields_of(row), customer_drafts.provider_required(row.currencies)
        )
    ]


async def ensure_ready_for_currency(
    session: AsyncSession, *, tenant_id: str, customer_id: str, currency: str
) -> CustomerRow:
    """Money movement in `currency` needs every provider-required field for it (SPEC §2 rule 1)."""
    return _ready(await load_active(session, tenant_id=tenant_id, customer_id=customer_id), currency)


def _ready(row: CustomerRow, currency: str) -> CustomerRow:
    problems = v.missing_for_currencies(
        customer_drafts.fields_of(row), customer_drafts.provider_required([currency])
    )
    if problems:
        raise customer_drafts.refusal(problems)
    return row


def active_ids_query(*, tenant_id: str) -> Select[Any]:
    """A statement selecting the ids of the tenant's active customers (its one column), by id, for a domain
    above to narrow with its own conditions in one query (the accounts backfill: those lacking an account)."""
    return repository.active_ids_query(tenant_id=tenant_id)


OWNER_WIDTH = repository.OWNER_WIDTH


def platform_customer_id_of(customer_id: ColumnElement[str]) -> Any:
    """The platformCustomerId of the customer `customer_id` names, as a scalar subquery: for a statement of
    another domain to read it in the same round trip (a card authorization records its cardholder's)."""
    return repository.platform_customer_id_of(customer_id)


def with_owner(
    stmt: Select[Any], *, customer_id: ColumnElement[Any], tenant_id: ColumnElement[Any]
) -> Select[Any]:
    """`stmt` (a Core SELECT) with the customer that its column `customer_id` names (in the tenant `tenant_id`
    names) read in the same query: outer-joined, its columns appended as the last `OWNER_WIDTH` columns of
    each row, which `owner_from` turns into the customer. For the transfer path, which reads an account and
    then checks its owner (`check_can_move_money`) in one round trip: its statement is built once, at import."""
    return repository.with_owner(stmt, customer_id=customer_id, tenant_id=tenant_id)


def owner_from(values: Sequence[Any]) -> CustomerRow | None:
    """The customer read by `with_owner`'s columns (`values`: the last `OWNER_WIDTH` of a row), for reading
    (a change to it is not saved); None when there is none."""
    return repository.owner_from(values)


async def ensure_can_move_money(
    session: AsyncSession, *, tenant_id: str, customer_id: str, currency: str, receiving: bool = False
) -> CustomerRow:
    """The one readiness check before a customer sends (or, `receiving`, is paid) money in `currency`:
    active, every provider-required field for the currency on file, and not failed KYC (403 USER_NOT_READY)."""
    row = await repository.get(session, tenant_id=tenant_id, customer_id=customer_id)
    return check_can_move_money(row, customer_id=customer_id, currency=currency, receiving=receiving)


def check_can_move_money(
    row: CustomerRow | None, *, customer_id: str, currency: str, receiving: bool = False
) -> CustomerRow:
    """`ensure_can_move_money` on the customer `customer_id` as the caller already read it (`row`; None when
    there is none): for the transfer path, which reads the owner with its account (`with_owner`)."""
    row = _ready(_active(_found(row, customer_id)), currency)
    _refuse_blocked(row, receiving=receiving)
    return row


def _refuse_blocked(row: CustomerRow, *, receiving: bool) -> None:
    """403 USER_NOT_READY for a customer whose KYC failed (REJECTED) or is on HOLD (the reference: "may be
    required to update or provide more information"; a resubmission, POST /verifications, lifts it)."""
    if row.kyc_status in BLOCKED:
        action = "receive payments" if receiving else "move money"
        why = "failed KYC" if row.kyc_status == KycStatus.REJECTED else "is on HOLD pending more information"
        raise CustomerNotReady(
            f"customer {row.id} {why} and cannot {action}",
            details={"customerId": row.id, "kycStatus": row.kyc_status},
        )


def ensure_end_user_terms_accepted(row: CustomerRow, *, tenant: TenantContext, settings: Settings) -> None:
    """403 END_USER_TERMS_NOT_ACCEPTED when the platform requires the End User Terms
    (PlatformConfig.endUserTermsRequired, off by default) and the customer has no acceptance of the current
    version on file. Called where the reference requires it: creating a quote for the customer."""
    if not tenant.end_user_terms_required:
        return
    current = settings.end_user_terms_version
    accepted = (row.end_user_terms_consent or {}).get("termsVersion")
    if accepted != current:
        had = f"it accepted {accepted!r}" if accepted else "it has accepted none"
        raise EndUserTermsNotAccepted(
            f"customer {row.id} must accept the End User Terms {current!r} first ({had}): send "
            "endUserTermsConsent with PATCH /customers/{customerId}",
            details={"customerId": row.id, "termsVersion": current, "acceptedVersion": accepted},
        )


async def ensure_kyc_not_rejected(
    session: AsyncSession, *, tenant_id: str, customer_id: str, receiving: bool = False
) -> CustomerRow:
    """The money gate alone (403 USER_NOT_READY for a customer whose KYC was REJECTED or is on HOLD), for a
    step whose other readiness checks already ran: executing a quote, paying into a customer's internal
    account."""
    row = await load_active(session, tenant_id=tenant_id, customer_id=customer_id)
    _refuse_blocked(row, receiving=receiving)
    return row


async def uma_address_owner(session: AsyncSession, *, tenant_id: str, uma_address: str) -> CustomerRow | None:
    return await repository.by_uma_address(session, tenant_id=tenant_id, uma_address=uma_address.lower())


def info_fields_on_file(row: CustomerRow, names: list[str]) -> set[str]:
    """Which of these CustomerInfoFieldNames the customer's registration already supplies (the same mapping
    the provider-requirement check uses); the rest would have to come from the platform."""
    return {
        name
        for name in names
        if not v.missing_for_currencies(customer_drafts.fields_of(row), {"_": [name]})
        and name in v._REQUIREMENT_FIELDS[row.customer_type]
    }


async def emails_of(
    session: AsyncSession, *, tenant_id: str, customer_ids: list[str]
) -> dict[str, str | None]:
    """The email on file of each of the tenant's customers named (absent from the map: no such customer)."""
    if not customer_ids:
        return {}
    return await repository.emails_of(session, tenant_id=tenant_id, customer_ids=customer_ids)


def pending_contact_channels(row: CustomerRow) -> list[str]:
    """The contact channels ("email", "phone") the customer's providers require and it has not confirmed
    yet: a KYC link is refused (409) while any is (SPEC §4.4)."""
    return contact.pending_channels(
        currencies=row.currencies,
        verified_contacts=row.verified_contacts,
        email=row.email,
        phone_number=row.phone_number,
    )


def sandbox_name_suffix(full_name: str | None) -> str | None:
    """The sandbox's KYC magic suffix of an individual's name (customers/sandbox.py: `Jane Doe 003` -> "003"),
    which decides onboarding's sandbox reviews too; None without one."""
    return sandbox.name_suffix(full_name)
