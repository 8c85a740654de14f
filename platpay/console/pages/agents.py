"""The console's agents pages: the platform's agents with their policies, the actions awaiting approval across
all of them (approve / reject: the API's operations, agents_service.approve_action / reject_action), and an
agent's page (its policy, usage against its limits as bars, its actions with the policy's decision, its
audit trail with the chain's verification, the console actions on it)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import Response
from starlette.datastructures import FormData

from platpay.agents import service as agents_service
from platpay.agents.audit import service as audit_service
from platpay.agents.errors import ActionNotPending
from platpay.agents.state import ActionStatus
from platpay.agents.types import LimitUsage
from platpay.auth.schemas import Permission
from platpay.auth.sessions import service as sessions_service
from platpay.console import web
from platpay.kit.pagination import PageParams

router = web.console_router()

# The list's status filter: what each value selects (GET /agents' isPaused / isConnected).
STATUS_FILTERS: dict[str, dict[str, bool]] = {
    "ACTIVE": {"is_paused": False},
    "PAUSED": {"is_paused": True},
    "CONNECTED": {"is_connected": True},
    "NOT_CONNECTED": {"is_connected": False},
}
PENDING_SHOWN = 50  # the approvals queue shows the oldest this many; the count says how many wait
AUDIT_SHOWN = 50  # the agent's page shows its latest this many audit records
BAR_WIDTH = 300  # the usage bars' width in SVG units
LIMIT_LABELS = {
    "perTransaction": "Per transaction",
    "daily": "Today",
    "dailyCount": "Transactions today",
    "monthly": "This month",
}


@dataclass(frozen=True)
class Bar:
    """One limit drawn as a bar: `fill` in SVG units out of BAR_WIDTH (integer arithmetic), `over` when what
    was used reached the limit."""

    name: str
    label: str
    limit: int | None
    used: int
    remaining: int | None
    currency: str | None
    resets: str | None
    fill: int
    over: bool


def bars_of(limits: list[LimitUsage]) -> list[Bar]:
    bars = []
    for limit in limits:
        name, cap, used = limit.name, limit.limit, limit.used
        fill = 0 if not cap else min(used * BAR_WIDTH // cap, BAR_WIDTH)
        bars.append(
            Bar(
                name=name,
                label=LIMIT_LABELS.get(name, name),
                limit=cap,
                used=used,
                remaining=limit.remaining,
                currency=limit.currency,
                resets=limit.resets,
                fill=fill,
                over=cap is not None and used >= cap and cap > 0,
            )
        )
    return bars


def _filters(request: Request) -> tuple[dict[str, str], dict[str, object]]:
    """The list's filters as the form shows them and as list_agents takes them; a bad one is a 400."""
    customer_id = web.query_text(request, "customerId")
    status = web.query_choice(request, "status", STATUS_FILTERS)
    service_filters: dict[str, object] = {"customer_id": customer_id}
    if status:
        service_filters.update(STATUS_FILTERS[status])
    return {"customerId": customer_id or "", "status": status or ""}, service_filters


@router.get("/agents")
async def agents_list(request: Request, console: web.Console = web.SignedIn) -> Response:
    shown, filters = _filters(request)
    params = web.page_params(request)
    tenant = console.principal.tenant
    async with console.db.read() as session:
        page, agents = await agents_service.list_agents(session, tenant=tenant, params=params, **filters)
        waiting = await agents_service.count_pending_approvals(session, tenant_id=tenant.id)
        pending = await agents_service.list_pending_actions(
            session,
            tenant_id=tenant.id,
            params=PageParams(limit=PENDING_SHOWN, after_id=None, descending=False),
        )
    return web.render(
        console,
        "agents/list.html",
        request=request,
        title="Agents",
        agents=agents,
        filters=shown,
        statuses=list(STATUS_FILTERS),
        next_url=web.next_page_url(request, page),
        waiting=waiting,
        pending=pending.items,
    )


@router.get("/agents/{agentId}")
async def agent_page(agentId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    params = web.page_params(request)
    tenant = console.principal.tenant
    async with console.db.read() as session:
        agent = await agents_service.get_agent(session, tenant=tenant, agent_id=agentId)
        limits = await agents_service.usage_against_limits(session, tenant_id=tenant.id, agent_id=agent.id)
        actions = await agents_service.list_agent_actions(
            session, tenant_id=tenant.id, agent_id=agent.id, params=params
        )
        records = await audit_service.list_records(
            session,
            tenant_id=tenant.id,
            agent_id=agent.id,
            params=PageParams(limit=AUDIT_SHOWN, after_id=None),
        )
        problems = await audit_service.verify(session, agent_id=agent.id)
        trail = await sessions_service.actions_for(session, tenant_id=tenant.id, subject_id=agent.id)
    return web.render(
        console,
        "agents/detail.html",
        request=request,
        title=f"Agent {agent.name}",
        agent=agent,
        bars=bars_of(list(limits)),
        bar_width=BAR_WIDTH,
        actions=actions.items,
        next_url=web.next_page_url(request, actions),
        records=[audit_service.to_api(row) for row in records.items],
        more_records=records.has_more,
        problems=problems,
        trail=trail,
        pending_status=ActionStatus.PENDING_APPROVAL.value,
        decided=request.query_params.get("decided"),
    )


def _already_decided(
    request: Request, console: web.Console, error: ActionNotPending, form: FormData
) -> Response:
    """The second of two decisions on one action (two tabs): nothing was done; say what it is now."""
    details = error.details or {}
    return web.render(
        console,
        "agents/already_decided.html",
        request=request,
        status=409,
        title="Already decided",
        action_id=details.get("actionId"),
        action_status=details.get("status"),
        agent_id=web.text_field(form, "agent_id", required=False, max_length=64),
    )


@router.post("/agents/actions/{actionId}/approve")
async def approve(actionId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    form = await web.form_of(console, permission=Permission.TRANSACT)
    try:
        async with console.db.transaction() as session:
            action = await agents_service.approve_action(
                session, tenant=console.principal.tenant, action_id=actionId, decided_by=console.principal.id
            )
            await console.record(
                session,
                action="AGENT_ACTION_APPROVED",
                subject_type="agent",
                subject_id=action.agent_id,
                actionId=action.id,
                status=action.status,
                amount=action.transfer_details.amount if action.transfer_details else None,
            )
    except ActionNotPending as error:
        return _already_decided(request, console, error, form)
    return web.redirect(f"/console/agents/{action.agent_id}?decided={action.id}")


@router.post("/agents/actions/{actionId}/reject")
async def reject(actionId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    form = await web.form_of(console, permission=Permission.TRANSACT)
    reason = web.text_field(form, "reason", required=False, max_length=500)
    try:
        async with console.db.transaction() as session:
            action = await agents_service.reject_action(
                session,
                tenant=console.principal.tenant,
                action_id=actionId,
                reason=reason,
                decided_by=console.principal.id,
            )
            await console.record(
                session,
                action="AGENT_ACTION_REJECTED",
                subject_type="agent",
                subject_id=action.agent_id,
                actionId=action.id,
                status=action.status,
                reason=action.rejection_reason,
            )
    except ActionNotPending as error:
        return _already_decided(request, console, error, form)
    return web.redirect(f"/console/agents/{action.agent_id}?decided={action.id}")
