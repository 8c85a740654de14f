"""The console's sandbox tools (sandbox sessions only): the tenant's clock, funding an internal account,
simulated arrivals (an incoming UMA payment, card network messages), webhook delivery faults, the mailbox and
a reset. Each form calls the service its API operation calls, with the permission that operation requires;
the money ones run through the same idempotency runner as the API (kit/idempotency.py), keyed by a random
value the form carries, so a form sent twice acts once."""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import FormData

from platpay.auth.schemas import Permission
from platpay.auth.sessions import service as sessions_service
from platpay.cards import service as cards_service
from platpay.cards.schemas import (
    SandboxCardAuthorizationRequest,
    SandboxCardClearingRequest,
    SandboxCardReturnRequest,
)
from platpay.clocks import service as clocks_service
from platpay.console import web
from platpay.db.unit_of_work import LeanFirst
from platpay.errors import ApiError, InvalidInput
from platpay.events import service as events_service
from platpay.events.schemas import SandboxWebhookFaultsRequest
from platpay.kit.idempotency import Idempotent
from platpay.messages import service as messages_service
from platpay.payments import service as payments_service
from platpay.payments.incoming import service as incoming_service
from platpay.payments.incoming.schemas import SandboxUmaReceiveRequest
from platpay.payments.schemas import SandboxFundRequest
from platpay.sandbox import service as sandbox_service

router = web.console_router()
M = TypeVar("M", bound=BaseModel)

PATH = f"{web.PREFIX}/sandbox"
UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}
# What a `done` query parameter says once an action went through (only these: no text from the URL is shown).
DONE = {
    "clock-advanced": "The clock moved forward; everything that fell due has run.",
    "clock-frozen": "The clock is frozen.",
    "clock-unfrozen": "The clock runs again from where it stood.",
    "clock-reset": "The clock is back on real time.",
    "funded": "The internal account was funded.",
    "received": "The incoming payment arrived; it awaits the platform's approval.",
    "card-authorization": "The card authorization was sent to the card's issuer.",
    "card-clearing": "The clearing was queued on the card transaction.",
    "card-return": "The return was queued on the card transaction.",
    "faults-set": "Webhook delivery faults are saved.",
    "reset": "The sandbox was reset: its data is gone, its credentials and clock stay.",
}


class FormRefused(Exception):
    """A form's values were refused: the page again, with the messages beside the fields, nothing changed."""

    def __init__(self, errors: dict[str, str], *, status: int = 400) -> None:
        super().__init__(errors)
        self.errors = errors
        self.status = status


def _values(form: FormData) -> dict[str, str]:
    return {key: value for key, value in form.items() if isinstance(value, str) and key != "csrf"}


def _text(form: FormData, name: str, errors: dict[str, str], *, required: bool = True) -> str | None:
    value = form.get(name)
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        if required:
            errors[name] = "Required."
        return None
    if len(text) > 320:
        errors[name] = "At most 320 characters."
        return None
    return text


def _whole(form: FormData, name: str, errors: dict[str, str], *, minimum: int = 1) -> int | None:
    """A whole number field (minor units, milliseconds...): digits only, no decimal point."""
    value = form.get(name)
    text = value.strip() if isinstance(value, str) else ""
    if not text.isdigit() or len(text) > 15:
        errors[name] = "A whole number, e.g. 1000 (minor units: 1000 is 10.00 USD)."
        return None
    number = int(text)
    if number < minimum:
        errors[name] = f"At least {minimum}."
        return None
    return number


def _validated(model: type[M], body: dict[str, Any], fields: Mapping[str, str]) -> M:
    """The API's own request model over the form's values: its limits apply as they do to the API."""
    try:
        return model.model_validate(body)
    except ValidationError as error:
        errors: dict[str, str] = {}
        for problem in error.errors():
            location = ".".join(str(part) for part in problem["loc"])
            errors.setdefault(fields.get(location, next(iter(fields.values()))), problem["msg"])
        raise FormRefused(errors) from None


def _errors_of(body: Mapping[str, Any], fields: Mapping[str, str]) -> dict[str, str]:
    """An API refusal's body as messages beside the form's fields (those its details name; else the first)."""
    message = str(body.get("message") or "Refused.")
    raw = body.get("details")
    details: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    errors: dict[str, str] = {}
    for entry in details.get("fields", []) if isinstance(details.get("fields"), list) else []:
        if isinstance(entry, Mapping) and entry.get("field") in fields:
            errors.setdefault(fields[entry["field"]], str(entry.get("message") or message))
    for key in details:
        if key in fields:
            errors.setdefault(fields[key], message)
    return errors or {next(iter(fields.values())): message}


def _idempotency_key(form: FormData) -> str:
    key = form.get("idempotency_key")
    if not isinstance(key, str) or not 16 <= len(key) <= 255 or not all(33 <= ord(c) <= 126 for c in key):
        raise InvalidInput(
            "idempotency_key is missing or malformed: reload the page and try again",
            details={"fields": [{"field": "idempotency_key", "reason": "malformed"}]},
        )
    return key


async def _once(
    console: web.Console,
    form: FormData,
    body: BaseModel,
    operation: Callable[[AsyncSession], Awaitable[Any]],
    fields: Mapping[str, str],
) -> None:
    """Run `operation` (a service call and its console trail record, in one transaction) through the API's
    idempotency runner under the form's key: a form sent twice acts once (the second replays the first's
    answer). A refusal becomes FormRefused (nothing changed)."""
    answer = await Idempotent(console.request, _idempotency_key(form)).run(body, operation, status=200)
    if answer.status_code >= 400:
        status = answer.status_code if answer.status_code not in (404, 422) else 400  # a bad value
        raise FormRefused(_errors_of(json.loads(bytes(answer.body)), fields), status=status)


async def _page(
    request: Request,
    console: web.Console,
    *,
    errors: dict[str, str] | None = None,
    values: dict[str, str] | None = None,
    status: int = 200,
) -> Response:
    console.require_sandbox()
    tenant_id = console.tenant_id
    params = web.page_params(request)
    async with console.db.read() as session:
        faults = await events_service.sandbox_faults(session, tenant_id=tenant_id)
        mail_page, mail = await messages_service.list_mailbox(session, tenant_id=tenant_id, params=params)
        trail = await sessions_service.actions_for(session, tenant_id=tenant_id, subject_id=tenant_id)
    done = request.query_params.get("done") if status == 200 else None
    return web.render(
        console,
        "sandbox/index.html",
        request=request,
        status=status,
        title="Sandbox tools",
        clock=clocks_service.view(console.principal.tenant.clock),
        faults=faults,
        mail=mail,
        next_url=web.next_page_url(request, mail_page) if status == 200 else None,
        trail=trail,
        notice=DONE.get(done or ""),
        errors=errors or {},
        values=values or {},
        units=list(UNITS),
        key=secrets.token_urlsafe(24),
    )


def _acting(
    permission: Permission,
) -> Callable[[Callable[[web.Console, FormData], Awaitable[str]]], Callable[..., Awaitable[Response]]]:
    """A tool's POST: sandbox only, the form's CSRF and `permission`, then the action (which returns its
    `done` word), back to the page; refused values -> the page again with the messages, status 400."""

    def wrap(action: Callable[[web.Console, FormData], Awaitable[str]]) -> Callable[..., Awaitable[Response]]:
        async def endpoint(request: Request, console: web.Console = web.SignedIn) -> Response:
            console.require_sandbox()
            form = await web.form_of(console, permission=permission)
            try:
                done = await action(console, form)
            except FormRefused as refused:
                return await _page(
                    request, console, errors=refused.errors, values=_values(form), status=refused.status
                )
            return web.redirect(f"{PATH}?done={done}")

        endpoint.__name__ = action.__name__
        endpoint.__doc__ = action.__doc__
        return endpoint

    return wrap


@router.get("/sandbox")
async def tools(request: Request, console: web.Console = web.SignedIn) -> Response:
    return await _page(request, console)


async def _record_tenant(console: web.Console, action: str, **data: Any) -> None:
    """The trail record of an action whose service runs its own transactions (the clock's)."""
    async with console.db.transaction() as session:
        await console.record(
            session, action=action, subject_type="tenant", subject_id=console.tenant_id, **data
        )


async def advance_clock(console: web.Console, form: FormData) -> str:
    """POST /sandbox/clock/advance: forward by a number of seconds, minutes, hours or days."""
    errors: dict[str, str] = {}
    count = _whole(form, "clock_count", errors)
    unit = form.get("clock_unit")
    if unit not in UNITS:
        errors["clock_unit"] = "Seconds, minutes, hours or days."
    if errors or count is None or not isinstance(unit, str):
        raise FormRefused(errors)
    seconds = count * UNITS[unit]
    if seconds > clocks_service.MAX_ADVANCE_SECONDS:
        raise FormRefused({"clock_count": "At most about ten years at once."})
    try:
        moved = await clocks_service.advance(
            console.db, console.settings, tenant_id=console.tenant_id, seconds=seconds
        )
    except InvalidInput as refused:
        raise FormRefused({"clock_count": refused.message}) from None
    await _record_tenant(console, "SANDBOX_CLOCK_ADVANCED", seconds=seconds, jobs_run=moved.jobs_run or 0)
    return "clock-advanced"


async def freeze_clock(console: web.Console, form: FormData) -> str:
    """POST /sandbox/clock/freeze."""
    await clocks_service.freeze(console.db, tenant_id=console.tenant_id)
    await _record_tenant(console, "SANDBOX_CLOCK_FROZEN")
    return "clock-frozen"


async def unfreeze_clock(console: web.Console, form: FormData) -> str:
    """POST /sandbox/clock/unfreeze."""
    await clocks_service.unfreeze(console.db, tenant_id=console.tenant_id)
    await _record_tenant(console, "SANDBOX_CLOCK_UNFROZEN")
    return "clock-unfrozen"


async def reset_clock(console: web.Console, form: FormData) -> str:
    """POST /sandbox/clock/reset: refused (409) while the clock is ahead of real time."""
    try:
        await clocks_service.reset(console.db, console.settings, tenant_id=console.tenant_id)
    except ApiError as refused:
        raise FormRefused({"clock": refused.message}, status=refused.status) from None
    await _record_tenant(console, "SANDBOX_CLOCK_RESET")
    return "clock-reset"


async def fund(console: web.Console, form: FormData) -> str:
    """POST /sandbox/internal-accounts/{accountId}/fund: minor units of the account's own currency."""
    errors: dict[str, str] = {}
    account_id = _text(form, "fund_account", errors)
    amount = _whole(form, "fund_amount", errors)
    if errors or account_id is None:
        raise FormRefused(errors)
    fields = {"accountId": "fund_account", "amount": "fund_amount"}
    body = _validated(SandboxFundRequest, {"amount": amount}, fields)
    tenant = console.principal.tenant

    async def operation(session: AsyncSession) -> Any:
        funded = await payments_service.fund_internal_account(
            session, tenant=tenant, account_id=account_id, amount=body.amount
        )
        await console.record(
            session,
            action="SANDBOX_FUNDED",
            subject_type="internal_account",
            subject_id=account_id,
            amount=body.amount,
            currency=funded.balance.currency.code,
        )
        return funded

    await _once(console, form, body, operation, fields)
    return "funded"


async def receive(console: web.Console, form: FormData) -> str:
    """POST /sandbox/uma/receive: a sandbox UMA sender pays a customer (named by id or UMA address)."""
    errors: dict[str, str] = {}
    sender = _text(form, "receive_sender", errors)
    customer_id = _text(form, "receive_customer", errors, required=False)
    receiver = _text(form, "receive_receiver", errors, required=False)
    currency = _text(form, "receive_currency", errors)
    amount = _whole(form, "receive_amount", errors)
    if (customer_id is None) == (receiver is None) and "receive_customer" not in errors:
        errors["receive_customer"] = "Give a customer id or a receiver UMA address (one of them)."
    if errors:
        raise FormRefused(errors)
    fields = {
        "senderUmaAddress": "receive_sender",
        "customerId": "receive_customer",
        "receiverUmaAddress": "receive_receiver",
        "receivingCurrencyCode": "receive_currency",
        "receivingCurrencyAmount": "receive_amount",
    }
    body = _validated(
        SandboxUmaReceiveRequest,
        {
            "senderUmaAddress": sender,
            "customerId": customer_id,
            "receiverUmaAddress": receiver,
            "receivingCurrencyCode": (currency or "").upper(),
            "receivingCurrencyAmount": amount,
        },
        fields,
    )
    tenant, settings = console.principal.tenant, console.settings

    async def operation(session: AsyncSession) -> Any:
        payment = await incoming_service.receive_sandbox_payment(
            session,
            tenant=tenant,
            sender_uma_address=body.sender_uma_address,
            receiver_uma_address=body.receiver_uma_address,
            customer_id=body.customer_id,
            receiving_currency_code=body.receiving_currency_code,
            receiving_currency_amount=body.receiving_currency_amount,
            settings=settings,
        )
        await console.record(
            session,
            action="SANDBOX_UMA_RECEIVED",
            subject_type="transaction",
            subject_id=payment.id,
            amount=body.receiving_currency_amount,
            currency=body.receiving_currency_code,
            sender=body.sender_uma_address,
        )
        return payment

    await _once(console, form, body, operation, fields)
    return "received"


async def card_authorization(console: web.Console, form: FormData) -> str:
    """POST /sandbox/cards/{id}/simulate/authorization: the network asks to authorize an amount."""
    errors: dict[str, str] = {}
    card_id = _text(form, "auth_card", errors)
    amount = _whole(form, "auth_amount", errors)
    currency = _text(form, "auth_currency", errors)
    merchant = _text(form, "auth_merchant", errors)
    if errors or card_id is None:
        raise FormRefused(errors)
    fields = {
        "cardId": "auth_card",
        "amount": "auth_amount",
        "currency.code": "auth_currency",
        "currency": "auth_currency",
        "merchant.descriptor": "auth_merchant",
    }
    body = _validated(
        SandboxCardAuthorizationRequest,
        {
            "amount": amount,
            "currency": {"code": (currency or "").upper()},
            "merchant": {"descriptor": merchant},
        },
        fields,
    )
    opening = cards_service.accept_opening(
        tenant=console.principal.tenant,
        card_id=card_id,
        kind=cards_service.MessageKind.AUTHORIZATION,
        merchant=body.merchant.model_dump(),
        amount=body.amount,
        currency=body.currency.code,
        settings=console.settings,
    )
    # A keyed request runs in an ordinary transaction: the careful attempt of a LeanFirst is the operation.
    attempt: Callable[[AsyncSession], Awaitable[Any]] = (
        opening.careful if isinstance(opening, LeanFirst) else opening
    )

    async def operation(session: AsyncSession) -> Any:
        answer = await attempt(session)
        await console.record(
            session,
            action="SANDBOX_CARD_AUTHORIZED",
            subject_type="card",
            subject_id=card_id,
            amount=body.amount,
            currency=body.currency.code,
            merchant=body.merchant.descriptor,
        )
        return answer

    await _once(console, form, body, operation, fields)
    return "card-authorization"


async def _card_message(
    console: web.Console, form: FormData, prefix: str, message: Any, model: type[BaseModel], minimum: int
) -> None:
    errors: dict[str, str] = {}
    card_id = _text(form, f"{prefix}_card", errors)
    transaction_id = _text(form, f"{prefix}_transaction", errors)
    amount = _whole(form, f"{prefix}_amount", errors, minimum=minimum)
    if errors or card_id is None:
        raise FormRefused(errors)
    fields = {
        "cardId": f"{prefix}_card",
        "cardTransactionId": f"{prefix}_transaction",
        "amount": f"{prefix}_amount",
    }
    body: Any = _validated(model, {"cardTransactionId": transaction_id, "amount": amount}, fields)
    tenant = console.principal.tenant

    async def operation(session: AsyncSession) -> Any:
        answer = await cards_service.accept_message(
            session,
            tenant=tenant,
            card_id=card_id,
            message=message,
            transaction_id=body.card_transaction_id,
            amount=body.amount,
        )
        await console.record(
            session,
            action=f"SANDBOX_CARD_{prefix.upper()}",
            subject_type="card_transaction",
            subject_id=body.card_transaction_id,
            card_id=card_id,
            amount=body.amount,
        )
        return answer

    await _once(console, form, body, operation, fields)


async def card_clearing(console: web.Console, form: FormData) -> str:
    """POST /sandbox/cards/{id}/simulate/clearing: capture (0 expires the authorization)."""
    await _card_message(
        console, form, "clearing", cards_service.Message.CLEARING, SandboxCardClearingRequest, 0
    )
    return "card-clearing"


async def card_return(console: web.Console, form: FormData) -> str:
    """POST /sandbox/cards/{id}/simulate/return: a merchant's refund of a settled amount."""
    await _card_message(console, form, "return", cards_service.Message.RETURN, SandboxCardReturnRequest, 1)
    return "card-return"


async def webhook_faults(console: web.Console, form: FormData) -> str:
    """PUT /sandbox/webhooks/faults: the whole setting (an empty field is off)."""
    errors: dict[str, str] = {}
    delay = _whole(form, "faults_delay", errors, minimum=0) if form.get("faults_delay") else 0
    reorder = _whole(form, "faults_reorder", errors, minimum=0) if form.get("faults_reorder") else 0
    if errors:
        raise FormRefused(errors)
    body = _validated(
        SandboxWebhookFaultsRequest,
        {"duplicate": form.get("faults_duplicate") == "on", "delayMs": delay, "reorderMs": reorder},
        {"delayMs": "faults_delay", "reorderMs": "faults_reorder", "duplicate": "faults_duplicate"},
    )
    async with console.db.transaction() as session:
        await events_service.set_sandbox_faults(
            session,
            tenant_id=console.tenant_id,
            duplicate=body.duplicate,
            delay_ms=body.delay_ms,
            reorder_ms=body.reorder_ms,
        )
        await console.record(
            session,
            action="SANDBOX_WEBHOOK_FAULTS_SET",
            subject_type="tenant",
            subject_id=console.tenant_id,
            duplicate=body.duplicate,
            delay_ms=body.delay_ms,
            reorder_ms=body.reorder_ms,
        )
    return "faults-set"


async def reset(console: web.Console, form: FormData) -> str:
    """POST /sandbox/reset: the tenant's data deleted; credentials, console sessions and trail, clock stay."""
    async with console.db.transaction() as session:
        deleted = await sandbox_service.reset(session, tenant=console.principal.tenant)
        await console.record(
            session,
            action="SANDBOX_RESET",
            subject_type="tenant",
            subject_id=console.tenant_id,
            rows_deleted=sum(deleted.values()),
        )
    return "reset"


for _path, _permission, _action in (
    ("/sandbox/clock/advance", Permission.MANAGE, advance_clock),
    ("/sandbox/clock/freeze", Permission.MANAGE, freeze_clock),
    ("/sandbox/clock/unfreeze", Permission.MANAGE, unfreeze_clock),
    ("/sandbox/clock/reset", Permission.MANAGE, reset_clock),
    ("/sandbox/fund", Permission.TRANSACT, fund),
    ("/sandbox/receive", Permission.TRANSACT, receive),
    ("/sandbox/cards/authorization", Permission.TRANSACT, card_authorization),
    ("/sandbox/cards/clearing", Permission.TRANSACT, card_clearing),
    ("/sandbox/cards/return", Permission.TRANSACT, card_return),
    ("/sandbox/webhook-faults", Permission.MANAGE, webhook_faults),
    ("/sandbox/reset", Permission.MANAGE, reset),
):
    router.post(_path)(_acting(_permission)(_action))
