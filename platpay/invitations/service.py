"""UMA invitations (SPEC §3, §4.8): created by a platform for one of its customers, read and claimed by code
by any platform of the same environment, cancelled only by the platform that created it, EXPIRED by a job
at `expiresAt`.

Codes: 12 characters of Crockford's base32 alphabet in lower case (no i, l, o, u), drawn from the OS's
CSPRNG: 60 bits, so that guessing is hopeless even for an enumerator that owns API credentials (a million
live invitations leave one chance in 2^40 per guess) while the code stays short enough to read out or type.
Uniqueness is the primary key's: a collision (never seen in practice) draws again.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers import service as customers_service
from platpay.customers.errors import UmaAddressOwnerNotFound
from platpay.errors import InvalidUmaAddress, invalid_field
from platpay.events import service as events_service
from platpay.invitations import repository
from platpay.invitations.errors import (
    InvitationAlreadyClaimed,
    InvitationCancelled,
    InvitationExpired,
    InvitationNotFound,
    NotTheInvitingPlatform,
)
from platpay.invitations.models import InvitationRow
from platpay.invitations.schemas import UmaInvitation
from platpay.invitations.state import INVITATION, InvitationStatus
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.kit.money import currency_amount
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

EXPIRE_JOB = "invitations.expire"
CLAIMED_EVENT = "INVITATION_CLAIMED"
PAGE_PATH = "/i"  # the invitation page: {base URL}/i/{invitationCode}, outside the API's base path

CODE_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
CODE_LENGTH = 12  # 60 bits
_CODE_RE = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LENGTH}}}")
_UMA_RE = re.compile(r"^\$([a-z0-9._+\-]{1,63})@([a-z0-9](?:[a-z0-9.\-]{0,251}[a-z0-9])?)$")


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalized_code(code: str) -> str | None:
    """`code` as stored (codes are read case-insensitively), or None when it cannot be one."""
    lowered = code.strip().lower()
    return lowered if _CODE_RE.fullmatch(lowered) else None


def status_at(row: InvitationRow, now: datetime) -> InvitationStatus:
    """The invitation's status as the API shows it: a PENDING one past its expiresAt is EXPIRED already,
    though the expiry job may not have recorded it yet."""
    status = InvitationStatus(row.status)
    if status == InvitationStatus.PENDING and row.expires_at is not None and row.expires_at <= now:
        return InvitationStatus.EXPIRED
    return status


def to_schema(row: InvitationRow, *, now: datetime) -> UmaInvitation:
    amount = None
    if row.amount_to_send is not None and row.amount_currency is not None:
        amount = currency_amount(row.amount_to_send, row.amount_currency)
    return UmaInvitation(
        code=row.code,
        invitation_code=row.code,
        created_at=row.created_at,
        claimed_at=row.claimed_at,
        url=row.url,
        expires_at=row.expires_at,
        inviter_uma=row.inviter_uma,
        invitee_uma=row.invitee_uma,
        status=status_at(row, now).value,
        first_name=row.first_name,
        amount_to_send=amount,
    )


def _uma(value: str, field: str) -> str:
    lowered = value.strip().lower()
    if not _UMA_RE.match(lowered):
        raise invalid_field(
            field, f"{value!r} is not a UMA address like $name@domain.com", error=InvalidUmaAddress
        )
    return lowered


async def _own_customer(session: AsyncSession, *, tenant: TenantContext, uma: str, field: str) -> Any:
    """The active customer of `tenant` at the UMA address `uma` (already normalized), or 404 naming `field`."""
    customer = await customers_service.uma_address_owner(session, tenant_id=tenant.id, uma_address=uma)
    if customer is None:
        raise UmaAddressOwnerNotFound(uma)
    return customer


def _first_name(value: str | None) -> str | None:
    if value is None:
        return None
    if value != value.strip() or not value.isprintable():
        raise invalid_field("firstName", "must be printable, without leading or trailing spaces")
    return value


async def create_invitation(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    inviter_uma: str,
    first_name: str | None = None,
    amount_to_send: int | None = None,
    expires_at: datetime | None = None,
    page_base_url: str,
) -> UmaInvitation:
    """POST /invitations: a PENDING invitation from the customer at `inviter_uma` (one of `tenant`'s);
    `amount_to_send` is in minor units of that customer's first currency (display only)."""
    uma = _uma(inviter_uma, "inviterUma")
    name = _first_name(first_name)
    now = clock.now(tenant)
    if expires_at is not None and expires_at <= now:
        raise invalid_field("expiresAt", f"must be in the future (now is {clock.isoformat(now)})")
    inviter = await _own_customer(session, tenant=tenant, uma=uma, field="inviterUma")
    currency = None
    if amount_to_send is not None:
        if not inviter.currencies:
            raise invalid_field("amountToSend", "the inviter has no currency to send it in")
        currency = inviter.currencies[0]
    values: dict[str, Any] = {
        "environment": tenant.environment,
        "tenant_id": tenant.id,
        "inviter_customer_id": inviter.id,
        "inviter_uma": uma,
        "invitee_uma": None,
        "claimed_by_tenant_id": None,
        "status": InvitationStatus.PENDING.value,  # INVITATION.initial
        "first_name": name,
        "amount_to_send": amount_to_send,
        "amount_currency": currency,
        "expires_at": expires_at,
        "claimed_at": None,
        "cancelled_at": None,
        "created_at": now,
        "updated_at": now,
    }
    row = await _insert_with_fresh_code(session, values, page_base_url=page_base_url)
    if expires_at is not None:
        await jobs_service.enqueue(
            session, EXPIRE_JOB, {"invitationCode": row.code}, tenant_id=tenant.id, run_at=expires_at
        )
    return to_schema(row, now=now)


async def _insert_with_fresh_code(
    session: AsyncSession, values: dict[str, Any], *, page_base_url: str
) -> InvitationRow:
    base = page_base_url.rstrip("/")
    for _ in range(5):
        code = new_code()
        try:
            async with session.begin_nested():
                return await repository.insert(
                    session, {**values, "code": code, "url": f"{base}{PAGE_PATH}/{code}"}
                )
        except IntegrityError:  # the code was taken (60 random bits: practically never)
            continue
    raise RuntimeError("no free invitation code after 5 draws")


async def _load(
    session: AsyncSession, *, tenant: TenantContext, code: str, for_update: bool = False
) -> InvitationRow:
    stored = normalized_code(code)
    row = (
        await repository.get(session, code=stored, environment=tenant.environment, for_update=for_update)
        if stored is not None
        else None
    )
    if row is None:
        raise InvitationNotFound(code)
    return row


async def _creator_now(session: AsyncSession, *, row: InvitationRow, tenant: TenantContext) -> datetime:
    """Now on the clock of the platform that created `row` (its expiresAt is that clock's time; a sandbox
    tenant's clock may differ from another's)."""
    if row.tenant_id == tenant.id:
        return clock.now(tenant)
    return clock.now(await tenants_service.load(session, tenant_id=row.tenant_id))


async def get_invitation(session: AsyncSession, *, tenant: TenantContext, code: str) -> UmaInvitation:
    """GET /invitations/{invitationCode}: any platform of the environment may read an invitation by code."""
    row = await _load(session, tenant=tenant, code=code)
    return to_schema(row, now=await _creator_now(session, row=row, tenant=tenant))


def _refuse_terminal(row: InvitationRow, *, now: datetime, action: str) -> None:
    status = status_at(row, now)
    details = {"invitationCode": row.code, "status": status.value}
    if status == InvitationStatus.CLAIMED:
        raise InvitationAlreadyClaimed(
            f"invitation {row.code} was already claimed and cannot be {action}", details=details
        )
    if status == InvitationStatus.CANCELLED:
        raise InvitationCancelled(
            f"invitation {row.code} was cancelled and cannot be {action}", details=details
        )
    if status == InvitationStatus.EXPIRED:
        raise InvitationExpired(f"invitation {row.code} has expired and cannot be {action}", details=details)


async def claim_invitation(
    session: AsyncSession, *, tenant: TenantContext, code: str, invitee_uma: str
) -> UmaInvitation:
    """POST /invitations/{invitationCode}/claim by any platform of the environment, for one of its own
    customers (`invitee_uma`): PENDING -> CLAIMED, and INVITATION_CLAIMED to the platform that created it."""
    uma = _uma(invitee_uma, "inviteeUma")
    row = await _load(session, tenant=tenant, code=code, for_update=True)
    now = await _creator_now(session, row=row, tenant=tenant)
    _refuse_terminal(row, now=now, action="claimed")
    if uma == row.inviter_uma:
        raise invalid_field("inviteeUma", "is the inviter's own address: an invitation is for someone else")
    await _own_customer(session, tenant=tenant, uma=uma, field="inviteeUma")
    row.status = INVITATION.move(row.status, InvitationStatus.CLAIMED, subject=row.code)
    row.invitee_uma = uma
    row.claimed_by_tenant_id = tenant.id
    row.claimed_at = now
    row.updated_at = now
    await session.flush()
    invitation = to_schema(row, now=now)
    await events_service.emit(session, tenant_id=row.tenant_id, type=CLAIMED_EVENT, resource=invitation)
    return invitation


async def cancel_invitation(session: AsyncSession, *, tenant: TenantContext, code: str) -> UmaInvitation:
    """POST /invitations/{invitationCode}/cancel, by the platform that created it only (403 for another):
    PENDING -> CANCELLED; its page then shows it cancelled."""
    row = await _load(session, tenant=tenant, code=code, for_update=True)
    if row.tenant_id != tenant.id:
        raise NotTheInvitingPlatform(
            f"invitation {row.code} was created by another platform: only it may cancel it",
            details={"invitationCode": row.code},
        )
    now = clock.now(tenant)
    _refuse_terminal(row, now=now, action="cancelled")
    row.status = INVITATION.move(row.status, InvitationStatus.CANCELLED, subject=row.code)
    row.cancelled_at = now
    row.updated_at = now
    await session.flush()
    return to_schema(row, now=now)


async def expire(session: AsyncSession, *, code: str) -> bool:
    """The expiry job: a PENDING invitation at or past its expiresAt becomes EXPIRED (no webhook: the
    reference has none). Whether it did."""
    row = await repository.get(session, code=code, environment=None, for_update=True)
    now = clock.now()
    if row is None or row.status != InvitationStatus.PENDING or row.expires_at is None:
        return False
    if now < row.expires_at:
        return False
    row.status = INVITATION.move(row.status, InvitationStatus.EXPIRED, subject=row.code)
    row.updated_at = now
    await session.flush()
    return True


async def for_page(session: AsyncSession, *, code: str) -> tuple[UmaInvitation, bool] | None:
    """The invitation the public page at `url` shows (any environment: the code is the capability) and
    whether it is a sandbox one; None for no such invitation."""
    stored = normalized_code(code)
    row = await repository.get(session, code=stored, environment=None) if stored is not None else None
    if row is None:
        return None
    creator = await tenants_service.load(session, tenant_id=row.tenant_id)  # a sandbox's clock may be its own
    return to_schema(row, now=clock.now(creator)), row.environment == "sandbox"
