"""Agent management (SPEC §4.1): platform credentials only; an agent's token here is 403."""

from __future__ import annotations

from fastapi import Body, Depends, Query, Request, Response

from platpay.agents import operations
from platpay.agents import service as agents_service
from platpay.agents.schemas import (
    AGENT_CREATE_EXAMPLES,
    AGENT_POLICY_UPDATE_EXAMPLES,
    AGENT_REJECT_EXAMPLES,
    AGENT_UPDATE_EXAMPLES,
    Agent,
    AgentAction,
    AgentActionListResponse,
    AgentActionRejectRequest,
    AgentCreateRequest,
    AgentCreateResponse,
    AgentDeviceCode,
    AgentDeviceCodeRedeemResponse,
    AgentDeviceCodeStatusResponse,
    AgentListResponse,
    AgentPolicyUpdateRequest,
    AgentUpdateRequest,
)
from platpay.agents.state import ActionStatus
from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Transactor, Viewer, get_db
from platpay.kit.openapi import Responses
from platpay.kit.pagination import PageParams, page_params, sorted_page_params
from platpay.kit.routing import QueryTimestamp, api_router

router = api_router(tags=["Agent Management"])
CONFLICT: Responses = {409: {"description": "the agent or action is not in a state that allows this"}}


@router.post(
    "/agents",
    operation_id="createAgent",
    openapi_extra=AGENT_CREATE_EXAMPLES,
    status_code=201,
    response_model=AgentCreateResponse,
)
async def create_agent(
    body: AgentCreateRequest, request: Request, principal: Principal = Manager
) -> AgentCreateResponse:
    """Create an agent for a customer with a policy; returns it and the device code its software redeems."""
    async with get_db(request).transaction() as session:
        return await agents_service.create_agent(
            session,
            tenant=principal.tenant,
            name=body.name,
            customer_id=body.customer_id,
            policy=body.policy.model_dump(mode="json", by_alias=True, exclude_none=True),
            settings=request.app.state.settings,
        )


@router.get("/agents", operation_id="listAgents", response_model=AgentListResponse)
async def list_agents(
    request: Request,
    customer_id: str | None = Query(None, alias="customerId", max_length=64),
    is_paused: bool | None = Query(None, alias="isPaused"),
    is_connected: bool | None = Query(None, alias="isConnected"),
    created_after: QueryTimestamp | None = Query(None, alias="createdAfter"),
    created_before: QueryTimestamp | None = Query(None, alias="createdBefore"),
    updated_after: QueryTimestamp | None = Query(None, alias="updatedAfter"),
    updated_before: QueryTimestamp | None = Query(None, alias="updatedBefore"),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List the platform's agents, newest first; filters combine."""
    async with get_db(request).read() as session:
        page, agents = await agents_service.list_agents(
            session,
            tenant=principal.tenant,
            params=params,
            customer_id=customer_id,
            is_paused=is_paused,
            is_connected=is_connected,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            updated_before=updated_before,
        )
    return page.envelope([a.to_api() for a in agents])


@router.get("/agents/approvals", operation_id="listAgentApprovals", response_model=AgentActionListResponse)
async def list_approvals(
    request: Request,
    agent_id: str | None = Query(None, alias="agentId", max_length=64),
    customer_id: str | None = Query(None, alias="customerId", max_length=64),
    start_date: QueryTimestamp | None = Query(None, alias="startDate"),
    end_date: QueryTimestamp | None = Query(None, alias="endDate"),
    params: PageParams = Depends(sorted_page_params),
    principal: Principal = Viewer,
) -> dict:
    """Agent actions waiting for the platform's approval (PENDING_APPROVAL)."""
    async with get_db(request).read() as session:
        page, actions = await operations.list_actions(
            session,
            tenant=principal.tenant,
            params=params,
            agent_id=agent_id,
            customer_id=customer_id,
            status=ActionStatus.PENDING_APPROVAL,
            start_date=start_date,
            end_date=end_date,
        )
    return page.envelope([a.to_api() for a in actions])


@router.get(
    "/agents/device-codes/{code}/status",
    operation_id="getAgentDeviceCodeStatus",
    response_model=AgentDeviceCodeStatusResponse,
)
async def device_code_status(
    code: str, request: Request, principal: Principal = Viewer
) -> AgentDeviceCodeStatusResponse:
    """Whether a device code has been redeemed (poll for the agent's installation)."""
    async with get_db(request).read() as session:
        return await agents_service.device_code_status(session, tenant=principal.tenant, code=code[:64])


@router.post(
    "/agents/device-codes/{code}/redeem",
    operation_id="redeemAgentDeviceCode",
    response_model=AgentDeviceCodeRedeemResponse,
)
async def redeem_device_code(code: str, request: Request) -> AgentDeviceCodeRedeemResponse:
    """Redeem a device code for the agent's access token (no credentials: the code is the proof; once)."""
    async with get_db(request).transaction() as session:
        return await agents_service.redeem(session, code=code[:64])


@router.get("/agents/{agentId}", operation_id="getAgentById", response_model=Agent)
async def get_agent(agentId: str, request: Request, principal: Principal = Viewer) -> Agent:
    """Get one agent with its policy and usage."""
    async with get_db(request).read() as session:
        return await agents_service.get_agent(session, tenant=principal.tenant, agent_id=agentId)


@router.patch(
    "/agents/{agentId}", operation_id="updateAgent", openapi_extra=AGENT_UPDATE_EXAMPLES, response_model=Agent
)
async def update_agent(
    agentId: str, body: AgentUpdateRequest, request: Request, principal: Principal = Manager
) -> Agent:
    """Rename, pause or resume an agent (a paused agent's money requests are refused)."""
    async with get_db(request).transaction() as session:
        return await agents_service.update_agent(
            session, tenant=principal.tenant, agent_id=agentId, name=body.name, is_paused=body.is_paused
        )


@router.delete("/agents/{agentId}", operation_id="deleteAgent", status_code=204, response_class=Response)
async def delete_agent(agentId: str, request: Request, principal: Principal = Manager) -> Response:
    """Delete an agent permanently: its token stops working at once; its pending actions are rejected."""
    async with get_db(request).transaction() as session:
        await operations.delete_agent(
            session, tenant=principal.tenant, agent_id=agentId, decided_by=principal.id
        )
    return Response(status_code=204)


@router.patch(
    "/agents/{agentId}/policy",
    operation_id="updateAgentPolicy",
    openapi_extra=AGENT_POLICY_UPDATE_EXAMPLES,
    response_model=Agent,
)
async def update_policy(
    agentId: str, body: AgentPolicyUpdateRequest, request: Request, principal: Principal = Manager
) -> Agent:
    """Change an agent's policy in part (omitted fields keep their values); effective immediately."""
    changes = body.model_dump(mode="json", by_alias=True, exclude_unset=True)
    async with get_db(request).transaction() as session:
        return await agents_service.update_policy(
            session, tenant=principal.tenant, agent_id=agentId, changes=changes
        )


@router.post(
    "/agents/{agentId}/device-codes",
    operation_id="regenerateAgentDeviceCode",
    status_code=201,
    response_model=AgentDeviceCode,
    responses=CONFLICT,
)
async def regenerate_device_code(
    agentId: str, request: Request, principal: Principal = Manager
) -> AgentDeviceCode:
    """Issue a new device code (earlier unredeemed ones stop working); 409 once the agent is connected."""
    async with get_db(request).transaction() as session:
        return await agents_service.issue_device_code(
            session, tenant=principal.tenant, agent_id=agentId, settings=request.app.state.settings
        )


@router.post(
    "/agents/{agentId}/actions/{actionId}/approve",
    operation_id="approveAgentAction",
    response_model=AgentAction,
    responses=CONFLICT,
)
async def approve_action(
    agentId: str, actionId: str, request: Request, principal: Principal = Transactor
) -> AgentAction:
    """Approve a pending agent action: it executes now (APPROVED), or FAILED if it no longer can."""
    async with get_db(request).transaction() as session:
        return await operations.approve(
            session, tenant=principal.tenant, agent_id=agentId, action_id=actionId, decided_by=principal.id
        )


@router.post(
    "/agents/{agentId}/actions/{actionId}/reject",
    operation_id="rejectAgentAction",
    openapi_extra=AGENT_REJECT_EXAMPLES,
    response_model=AgentAction,
    responses=CONFLICT,
)
async def reject_action(
    agentId: str,
    actionId: str,
    request: Request,
    body: AgentActionRejectRequest | None = Body(None),
    principal: Principal = Transactor,
) -> AgentAction:
    """Reject a pending agent action: nothing executes and what it reserved is released."""
    async with get_db(request).transaction() as session:
        return await operations.reject(
            session,
            tenant=principal.tenant,
            agent_id=agentId,
            action_id=actionId,
            reason=body.reason if body else None,
            decided_by=principal.id,
        )
