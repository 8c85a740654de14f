"""The console's overview: what the platform holds, what moved, how its webhooks fare, what waits for a
person. A fixed number of statements whatever the data: one per read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from fastapi import Request
from fastapi.responses import Response

from platpay.accounts import service as accounts_service
from platpay.agents import service as agents_service
from platpay.console import web
from platpay.errors import invalid_field
from platpay.events import service as events_service
from platpay.kit import clock
from platpay.ledger import service as ledger_service
from platpay.ledger.types import MoneyFlow
from platpay.onboarding import service as onboarding_service
from platpay.payments import service as payments_service

router = web.console_router()

RANGES = (7, 30)
# The chart's drawing box (SVG user units; it scales to the page's width).
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 640, 200, 8, 28, 12


@dataclass(frozen=True)
class Bar:
    x: int
    y: int
    width: int
    height: int
    kind: str  # in | out
    label: str  # its value, for its own <title>


@dataclass(frozen=True)
class Day:
    day: date
    money_in: int
    money_out: int


@dataclass(frozen=True)
class Chart:
    """One currency's money in and out per day over the range, drawn with integer coordinates."""

    currency: str
    days: list[Day]
    total_in: int
    total_out: int
    peak: int
    bars: list[Bar]
    ticks: list[tuple[int, str, str]]  # (x, label, text-anchor) under the axis
    width: int = WIDTH
    height: int = HEIGHT
    baseline: int = HEIGHT - BOTTOM
    top: int = TOP


def _days_param(request: Request) -> int:
    raw = request.query_params.get("days") or "30"
    if raw not in {str(r) for r in RANGES}:
        raise invalid_field("days", "must be 7 or 30", location="query")
    return int(raw)


def _chart(currency: str, flows: dict[date, MoneyFlow], first: date, count: int) -> Chart:
    days = [
        Day(day, flows[day].money_in if day in flows else 0, flows[day].money_out if day in flows else 0)
        for day in (first + timedelta(days=offset) for offset in range(count))
    ]
    peak = max([max(d.money_in, d.money_out) for d in days] + [0])
    plot = HEIGHT - BOTTOM - TOP
    slot = (WIDTH - LEFT) // count
    bar = max((slot - 4) // 2, 1)
    bars: list[Bar] = []
    for index, day in enumerate(days):
        x = LEFT + index * slot + (slot - 2 * bar) // 2
        for offset, (kind, value) in enumerate((("in", day.money_in), ("out", day.money_out))):
            height = value * plot // peak if peak else 0  # integer scaling: no float near money
            if value and not height:
                height = 1  # a small movement stays visible
            bars.append(
                Bar(
                    x + offset * bar,
                    HEIGHT - BOTTOM - height,
                    bar,
                    height,
                    kind,
                    f"{day.day.isoformat()} {kind}",
                )
            )
    step = 1 if count <= 7 else 7
    ticks = [  # counted back from today, so today always has its label and none overlap
        (
            LEFT + index * slot + slot // 2 if index < count - 1 else WIDTH,
            day.day.strftime("%b %d"),
            "middle" if index < count - 1 else "end",
        )
        for index, day in enumerate(days)
        if (count - 1 - index) % step == 0
    ]
    return Chart(
        currency=currency,
        days=days,
        total_in=sum(d.money_in for d in days),
        total_out=sum(d.money_out for d in days),
        peak=peak,
        bars=bars,
        ticks=ticks,
    )


@router.get("")
async def overview(request: Request, console: web.Console = web.SignedIn) -> Response:
    days = _days_param(request)
    tenant_id = console.tenant_id
    today = clock.now().astimezone(UTC).date()
    first = today - timedelta(days=max(RANGES) - 1)
    async with console.db.read() as session:
        balances = await ledger_service.balances_by_currency(
            session,
            tenant_id=tenant_id,
            platform_accounts=accounts_service.internal_account_ids_of(tenant_id=tenant_id, customer_id=None),
        )
        flows = await ledger_service.money_flow(
            session, tenant_id=tenant_id, since=datetime.combine(first, time.min, tzinfo=UTC), bucket="day"
        )
        health = await events_service.endpoint_health(session, tenant_id=tenant_id)
        waiting = {
            "reviews": await onboarding_service.count_awaiting_review(session, tenant_id=tenant_id),
            "agents": await agents_service.count_pending_approvals(session, tenant_id=tenant_id),
            "incoming": await payments_service.count_incoming_awaiting_approval(session, tenant_id=tenant_id),
            "webhooks": await events_service.count_failed_deliveries(session, tenant_id=tenant_id),
        }
    by_currency: dict[str, dict[date, MoneyFlow]] = {}
    for flow in flows:
        by_currency.setdefault(flow.currency, {})[flow.period] = flow
    start = today - timedelta(days=days - 1)
    charts = [_chart(currency, by_currency[currency], start, days) for currency in sorted(by_currency)]
    totals = {
        currency: {
            span: (
                sum(f.money_in for d, f in per_day.items() if d > today - timedelta(days=span)),
                sum(f.money_out for d, f in per_day.items() if d > today - timedelta(days=span)),
            )
            for span in RANGES
        }
        for currency, per_day in by_currency.items()
    }
    return web.render(
        console,
        "overview.html",
        request=request,
        title="Overview",
        balances=balances,
        charts=[chart for chart in charts if chart.total_in or chart.total_out],
        totals=totals,
        days=days,
        ranges=RANGES,
        health=health,
        waiting=waiting,
        today=today,
    )
