"""GET /agents/{agentId}/audit: an agent's audit trail (agents/audit/service.py), platform credentials only."""

from __future__ import annotations

from fastapi import Depends, Query, Request

from platpay.agents.audit import service as audit
from platpay.agents.audit.schemas import AgentAuditRecordListResponse, AuditKind
from platpay.agents.errors import AgentNotFound
from platpay.auth.principal import Principal
from platpay.auth.principals import Viewer, get_db
from platpay.kit.pagination import PageParams, sorted_page_params
from platpay.kit.routing import QueryTimestamp, api_router

router = api_router(tags=["Agent Management"])


@router.get(
    "/agents/{agentId}/audit",
    operation_id="listAgentAuditRecords",
    response_model=AgentAuditRecordListResponse,
)
async def list_audit_records(
    agentId: str,
    request: Request,
    kind: AuditKind | None = Query(None),
    start_date: QueryTimestamp | None = Query(None, alias="startDate"),
    end_date: QueryTimestamp | None = Query(None, alias="endDate"),
    params: PageParams = Depends(sorted_page_params),
    principal: Principal = Viewer,
) -> dict:
    """The agent's audit trail, newest first (sortOrder=asc: in chain order), also of a deleted agent."""
    tenant_id = principal.tenant.id
    async with get_db(request).read() as session:
        if not await audit.has_trail(session, tenant_id=tenant_id, agent_id=agentId):
            raise AgentNotFound(agentId)
        page = await audit.list_records(
            session,
            tenant_id=tenant_id,
            agent_id=agentId,
            params=params,
            kind=kind,
            start=start_date,
            end=end_date,
        )
    return page.envelope([audit.to_api(row) for row in page.items])
