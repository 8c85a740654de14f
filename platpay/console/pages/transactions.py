"""The console's transactions: every kind GET /transactions lists (transfers, quotes' payments, incoming
payments, card transactions), filtered as the API filters them, and one transaction's page: its facts, its
timeline (status changes and webhook events with each delivery attempt), and the ledger entries it caused with
their totals per currency, which balance."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from platpay.accounts import service as accounts_service
from platpay.console import web
from platpay.errors import invalid_field
from platpay.events import service as events_service
from platpay.ledger import service as ledger_service
from platpay.ledger.state import LedgerAccountKind
from platpay.ledger.types import JournalEntry
from platpay.payments import service as payments_service

router = web.console_router()

# What the list's filters accept: the API's transaction statuses and types (payments/schemas.py), and the
# card transactions' own (payments_service.CARD_STATUSES), which GET /transactions filters the same way.
TRANSACTION_STATUSES = (
    "CREATED",
    "PENDING",
    "PENDING_AUTHORIZATION",
    "PROCESSING",
    "COMPLETED",
    "REJECTED",
    "FAILED",
    "REFUNDED",
    "EXPIRED",
)
STATUSES = TRANSACTION_STATUSES + tuple(sorted(payments_service.CARD_STATUSES - set(TRANSACTION_STATUSES)))
TYPES = ("OUTGOING", "INCOMING", "CARD")
_MAX_ID = 64


def _date(request: Request, name: str) -> date | None:
    value = (request.query_params.get(name) or "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise invalid_field(name, "must be a date, YYYY-MM-DD", location="query") from None


@dataclass(frozen=True)
class Filters:
    status: str | None = None
    type: str | None = None
    customer_id: str | None = None
    created_from: date | None = None
    created_to: date | None = None

    @property
    def start(self) -> datetime | None:
        return datetime.combine(self.created_from, time.min, UTC) if self.created_from else None

    @property
    def end(self) -> datetime | None:
        """The last instant of `created_to` (UTC): the day is included."""
        if self.created_to is None:
            return None
        return datetime.combine(self.created_to + timedelta(days=1), time.min, UTC) - timedelta(
            microseconds=1
        )


def filters_of(request: Request) -> Filters:
    customer_id = web.query_text(request, "customerId", max_length=_MAX_ID)
    found = Filters(
        status=web.query_choice(request, "status", STATUSES),
        type=web.query_choice(request, "type", TYPES),
        customer_id=customer_id,
        created_from=_date(request, "createdFrom"),
        created_to=_date(request, "createdTo"),
    )
    if found.created_from and found.created_to and found.created_from > found.created_to:
        raise invalid_field("createdTo", "must not be before createdFrom", location="query")
    return found


@router.get("/transactions")
async def transactions(request: Request, console: web.Console = web.SignedIn) -> Response:
    filters = filters_of(request)
    params = web.page_params(request)
    async with console.db.read() as session:
        page, items = await payments_service.list_transactions(
            session,
            tenant=console.principal.tenant,
            params=params,
            customer_id=filters.customer_id,
            type_=filters.type,
            status=filters.status,
            start_date=filters.start,
            end_date=filters.end,
        )
    return web.render(
        console,
        "transactions/list.html",
        request=request,
        title="Transactions",
        rows=[_row(item) for item in items],
        filters=filters,
        statuses=STATUSES,
        types=TYPES,
        next_url=web.next_page_url(request, page),
    )


@dataclass(frozen=True)
class Row:
    id: str
    kind: str
    status: str
    customer_id: str
    amount: int | None
    currency: str | None
    description: str
    created_at: datetime


def _row(item: Any) -> Row:
    """One line of the list, whatever the kind (a transaction or a card transaction)."""
    if item.type == "CARD":
        amount = item.authorized_amount
        return Row(
            item.id,
            "CARD",
            str(item.status),
            item.customer_id,
            amount.amount,
            amount.currency.code,
            item.merchant.descriptor or "",
            item.created_at,
        )
    money = item.sent_amount or item.received_amount
    return Row(
        item.id,
        str(item.type),
        str(item.status),
        item.customer_id,
        money.amount if money else None,
        money.currency.code if money else None,
        item.description or "",
        item.created_at,
    )


# One transaction's page.


@dataclass
class CurrencyTotal:
    currency: str
    debits: int = 0  # minor units, positive
    credits: int = 0

    @property
    def balanced(self) -> bool:
        return self.debits == self.credits


@dataclass
class EntryView:
    entry: JournalEntry
    totals: list[CurrencyTotal] = field(default_factory=list)

    @property
    def balanced(self) -> bool:
        return all(total.balanced for total in self.totals)


def _totals(entries: list[JournalEntry]) -> tuple[list[EntryView], list[CurrencyTotal]]:
    """Each entry with its debits and credits per currency, and the same over every entry."""
    overall: dict[str, CurrencyTotal] = {}
    views = []
    for entry in entries:
        own: dict[str, CurrencyTotal] = {}
        for posting in entry.postings:
            for bucket in (own, overall):
                total = bucket.setdefault(posting.currency, CurrencyTotal(posting.currency))
                if posting.amount < 0:
                    total.debits -= posting.amount
                else:
                    total.credits += posting.amount
        views.append(EntryView(entry, [own[c] for c in sorted(own)]))
    return views, [overall[c] for c in sorted(overall)]


@router.get("/transactions/{transaction_id}")
async def transaction(request: Request, transaction_id: str, console: web.Console = web.SignedIn) -> Response:
    async with console.db.read() as session:
        found = await payments_service.get_transaction(
            session, tenant=console.principal.tenant, transaction_id=transaction_id
        )
        entries = await ledger_service.entries_for_transaction(
            session, tenant_id=console.tenant_id, transaction_id=found.id
        )
        internal = sorted(
            {
                p.account_id
                for e in entries
                for p in e.postings
                if p.account_kind == LedgerAccountKind.INTERNAL
            }
        )
        owners = (
            await accounts_service.owners_of(session, tenant_id=console.tenant_id, account_ids=internal)
            if internal
            else {}
        )
        timeline = await events_service.timeline_for_resource(
            session, tenant_id=console.tenant_id, resource_id=found.id
        )
    views, totals = _totals(entries)
    changes = _status_changes(found, timeline)
    return web.render(
        console,
        "transactions/detail.html",
        request=request,
        title=f"Transaction {found.id}",
        tx=found,
        timeline_cut=len(timeline) >= events_service.TIMELINE_EVENTS,
        row=_row(found),
        entries=views,
        totals=totals,
        owners=owners,
        platform_id=console.principal.tenant.platform_id,
        timeline=timeline,
        changes=changes,
    )


@dataclass(frozen=True)
class StatusChange:
    at: datetime
    status: str
    previous: str | None
    event_type: str | None  # the webhook event that announced it (None: the transaction's creation)


def _status_changes(found: Any, timeline: list[Any]) -> list[StatusChange]:
    """The transaction's statuses over time: each event about it whose payload (the resource as GET returned
    it then) carries another status than the one before; the first one is the status it was created in. A
    status no event announced (a tenant without a webhook endpoint still records events, so this is rare) ends
    the list at the transaction's last update."""
    changes: list[StatusChange] = []
    for event in timeline:
        status = event.data.get("status") if isinstance(event.data, dict) else None
        previous = changes[-1].status if changes else None
        if status is not None and str(status) != previous:
            changes.append(StatusChange(event.created_at, str(status), previous, event.type))
    now = str(found.status)
    if not changes:
        changes.append(StatusChange(found.created_at, now, None, None))
    elif changes[-1].status != now:
        changes.append(StatusChange(found.updated_at, now, changes[-1].status, None))
    return changes
