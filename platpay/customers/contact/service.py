"""Contact verification (SPEC §3, §4.4): POST /customers/{id}/verify-email|verify-phone sends a one-time
code through the messages domain (queued in this transaction, sent by its job once it commits; a sandbox
tenant's messages are also kept in GET /sandbox/mailbox), and …/confirm moves the channel PENDING -> VERIFIED.

A code is 6 random digits, valid for 10 minutes and once; only its keyed digest is stored (contact/rules.py). Each
send replaces the channel's previous code. Abuse limits, per customer and channel: 5 sends and 10 confirm
attempts per 15 minutes (429 RATE_LIMITED with Retry-After, counted in the database so across processes),
and 5 wrong tries burn a code. A sandbox tenant's confirm also takes 123456, which needs no send. No webhook:
the reference has no customer event for a contact channel (INTERFACE-FACTS §5.2); the change shows in the
customer's `contactVerification` (and in the customer webhooks that follow)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers import service as customers_service
from platpay.customers.contact import repository as contact_repository
from platpay.customers.contact import rules as contact
from platpay.customers.errors import (
    ContactAlreadyVerified,
    ContactCodeRefused,
    ContactVerificationNotRequired,
    MissingMandatoryUserInfo,
)
from platpay.customers.models import CustomerRow
from platpay.customers.schemas import Customer
from platpay.errors import ApiError, invalid_field
from platpay.kit import clock, rate_limits
from platpay.kit.ids import new_id
from platpay.messages import service as messages_service
from platpay.tenants.context import TenantContext

CATEGORIES = {
    contact.EMAIL: "customer.verify_email",
    contact.PHONE: "customer.verify_phone",
}  # docs/messages.md's mailbox
_E164_RE = re.compile(r"\+[1-9][0-9]{1,14}")


def _check_channel(row: CustomerRow, channel: str) -> None:
    required = contact.required_channels(row.currencies)
    if channel not in required:
        raise ContactVerificationNotRequired(
            f"the providers of customer {row.id}'s currencies ({', '.join(row.currencies)}) do not require "
            f"{channel} verification",
            details={"customerId": row.id, "channel": channel, "requiredChannels": required},
        )
    if channel in contact.verified_channels(row.verified_contacts, email=row.email):
        raise ContactAlreadyVerified(
            f"customer {row.id}'s {channel} is already VERIFIED",
            details={"customerId": row.id, "channel": channel},
        )


def _limit(
    tenant: TenantContext, customer_id: str, channel: str, kind: str, maximum: int
) -> rate_limits.Limit:
    return rate_limits.Limit(
        f"customers.contact.{kind}:{tenant.id}:{customer_id}:{channel}",
        maximum,
        contact.LIMIT_WINDOW_SECONDS,
        f"{channel} verification {'codes sent' if kind == 'send' else 'attempts'} for this customer",
    )


async def _destination(
    session: AsyncSession, *, tenant: TenantContext, row: CustomerRow, channel: str, phone_number: str | None
) -> str:
    if channel == contact.EMAIL:
        if not row.email:
            raise MissingMandatoryUserInfo(
                f"customer {row.id} has no email to verify: set it with PATCH /customers/{{customerId}}",
                details={"fields": [{"field": "email", "message": "the customer has no email"}]},
            )
        return row.email
    if phone_number is not None:
        if not _E164_RE.fullmatch(phone_number):
            raise invalid_field("phoneNumber", "is not an E.164 phone number like +33612345678")
        if row.phone_number is not None and phone_number != row.phone_number:
            raise invalid_field(
                "phoneNumber",
                "is not the customer's phoneNumber: the code goes to the number on file (change it with "
                "PATCH /customers/{customerId})",
            )
        return phone_number
    if row.phone_number is not None:
        return row.phone_number
    last = await contact_repository.get(session, tenant_id=tenant.id, customer_id=row.id, channel=channel)
    if last is None:
        raise MissingMandatoryUserInfo(
            "phoneNumber: the customer has no phoneNumber: set it with PATCH /customers/{customerId}, or name "
            "the number to send the code to",
            details={"fields": [{"field": "phoneNumber", "message": "required for the first code"}]},
        )
    return last.destination


def _message(code: str) -> tuple[str, str]:
    minutes = contact.CODE_TTL_SECONDS // 60
    return (
        "Your verification code",
        f"Your verification code is {code}\n\nIt expires in {minutes} minutes. If you did not ask for it, "
        "ignore this message.",
    )


async def send_code(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    customer_id: str,
    channel: str,
    phone_number: str | None = None,
) -> None:
    """verify-email (`channel` "email") / verify-phone ("phone"): a new code for the channel, queued to the
    customer's email, or to `phone_number` (else the number the last code went to)."""
    row = await customers_service.load_active(
        session, tenant_id=tenant.id, customer_id=customer_id, for_update=True
    )
    _check_channel(row, channel)
    destination = await _destination(
        session, tenant=tenant, row=row, channel=channel, phone_number=phone_number
    )
    now = clock.now(tenant)
    refusal = await rate_limits.record(
        session, limits=[_limit(tenant, row.id, channel, "send", contact.SEND_LIMIT)], now=now
    )
    if refusal is not None:  # over the limit: refused before any work, and not counted (rolled back)
        raise refusal
    code, code_id = contact.new_code(), new_id("ContactCode")
    existing = await contact_repository.get(session, tenant_id=tenant.id, customer_id=row.id, channel=channel)
    await contact_repository.replace(
        session,
        existing,
        {
            "id": code_id,
            "tenant_id": tenant.id,
            "customer_id": row.id,
            "channel": channel,
            "destination": destination,
            "code_digest": contact.code_digest(code_id, code),
            "failed_attempts": 0,
            "expires_at": now + timedelta(seconds=contact.CODE_TTL_SECONDS),
            "used_at": None,
            "created_at": now,
        },
    )
    subject, text = _message(code)
    if channel == contact.EMAIL:
        await messages_service.send_email(
            session, tenant=tenant, to=destination, subject=subject, text=text, category=CATEGORIES[channel]
        )
    else:
        await messages_service.send_sms(
            session, tenant=tenant, to=destination, text=text, category=CATEGORIES[channel]
        )


@dataclass(frozen=True)
class Confirmation:
    """What a confirm came to: the customer with the channel VERIFIED, or the refusal to raise once the
    transaction (which counts the attempt) has committed."""

    customer: Customer | None = None
    refusal: ApiError | None = None


async def confirm_code(
    session: AsyncSession, *, tenant: TenantContext, customer_id: str, channel: str, code: str
) -> Confirmation:
    """verify-email/confirm, verify-phone/confirm. Commit the transaction whatever the outcome (a wrong code
    counts), then raise `refusal` if there is one."""
    row = await customers_service.load_active(
        session, tenant_id=tenant.id, customer_id=customer_id, for_update=True
    )
    _check_channel(row, channel)
    now = clock.now(tenant)
    limited = await rate_limits.record(
        session, limits=[_limit(tenant, row.id, channel, "confirm", contact.CONFIRM_LIMIT)], now=now
    )
    if limited is not None:
        return Confirmation(refusal=limited)
    pending = await contact_repository.get(session, tenant_id=tenant.id, customer_id=row.id, channel=channel)
    live = pending is not None and pending.used_at is None and pending.expires_at > now
    if tenant.is_sandbox and code == contact.SANDBOX_CODE:
        destination = pending.destination if pending is not None else None
    elif not live or pending is None:
        return Confirmation(
            refusal=_refused(f"no {channel} code is pending (none sent, expired or used): send a new one")
        )
    elif not contact.code_matches(pending.id, code, pending.code_digest):
        pending.failed_attempts += 1
        if pending.failed_attempts >= contact.MAX_FAILED_ATTEMPTS:
            pending.used_at = now  # burnt: a new code must be sent
        await session.flush()
        return Confirmation(refusal=_refused("the code is wrong"))
    else:
        destination = pending.destination
    if pending is not None and pending.used_at is None:
        pending.used_at = now
    if channel == contact.EMAIL:
        destination = row.email  # the email on file is what is now confirmed
    row.verified_contacts = {**(row.verified_contacts or {}), channel: destination}
    row.updated_at = now
    await session.flush()
    return Confirmation(customer=await customers_service.render(session, row))


def _refused(reason: str) -> ContactCodeRefused:
    return ContactCodeRefused(f"code: {reason}", details={"fields": [{"field": "code", "message": reason}]})
