"""GET /agents/{agentId}/audit: an agent's audit trail (agents/audit/service.py), platform credentials only."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import Depends, Query, Request
from pydantic import Field

from platpay.agents.audit import service as audit
from platpay.agents.errors import AgentNotFound
from platpay.auth.principal import Principal
from platpay.auth.principals import Viewer, get_db
from platpay.kit.api_model import ApiModel
from platpay.kit.pagination import Page, PageParams, sorted_page_params
from platpay.kit.routing import QueryTimestamp, api_router

router = api_router(tags=["Agent Management"])

AuditKind = Literal[audit.KINDS]  # type: ignore[valid-type]


class AgentAuditRecord(ApiModel):
    id: str
    tenant_id: str
    agent_id: str
    sequence: int = Field(description="1, 2, 3… per agent")
    kind: str = Field(description=" | ".join(audit.KINDS))
    actor: str | None = Field(None, description="the credential that caused it (KIND:id); absent: the system")
    occurred_at: datetime
    data: dict[str, Any]
    previous_hash: str = Field(description="the previous record's hash (64 zeros for the first)")
    hash: str = Field(
        description="hashAlgorithm of previousHash and the record's canonical content (hex): HMAC-SHA-256 under "
        "the audit key (HKDF-SHA-256 of the master key, info 'platpay agent audit chain v1')"
    )
    hash_algorithm: Literal[audit.KEYED, audit.PLAIN] = Field(  # type: ignore[valid-type]
        description="HMAC-SHA-256; SHA-256 for records written before the chain was keyed"
    )
    legacy_seal: str | None = Field(
        None,
        description="on the last SHA-256 record of a chain keyed later: HMAC-SHA-256 under the audit key of "
        "'legacy-seal', NUL and its hash, vouching for the SHA-256 records up to it; absent on every other",
    )


class AgentAuditRecordListResponse(Page[AgentAuditRecord]):
    """GET /agents/{agentId}/audit."""


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
