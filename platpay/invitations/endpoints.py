from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse

from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db
from platpay.invitations import page
from platpay.invitations import service as invitations_service
from platpay.invitations.schemas import (
    INVITATION_CLAIM_EXAMPLES,
    INVITATION_CREATE_EXAMPLES,
    UmaInvitation,
    UmaInvitationClaimRequest,
    UmaInvitationCreateRequest,
)
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.routing import api_router

router = api_router(tags=["Invitations"])
# The invitation page, outside the API's base path and without authentication: the code is the capability.
page_router = APIRouter(include_in_schema=False)


@router.post(
    "/invitations",
    operation_id="createInvitation",
    openapi_extra=INVITATION_CREATE_EXAMPLES,
    status_code=201,
    response_model=UmaInvitation,
)
async def create_invitation(
    body: UmaInvitationCreateRequest,
    request: Request,
    idem: Idempotent = Idempotency,
    principal: Principal = Manager,
) -> Response:
    """Create an UMA invitation from one of the platform's customers."""
    base_url = request.app.state.settings.base_url()
    return await idem.run(
        body,
        lambda s: invitations_service.create_invitation(
            s,
            tenant=principal.tenant,
            inviter_uma=body.inviter_uma,
            first_name=body.first_name,
            amount_to_send=body.amount_to_send,
            expires_at=body.expires_at,
            page_base_url=base_url,
        ),
        status=201,
    )


@router.get("/invitations/{invitationCode}", operation_id="getInvitation", response_model=UmaInvitation)
async def get_invitation(
    invitationCode: str, request: Request, principal: Principal = Viewer
) -> UmaInvitation:
    """Get an invitation by its code (any platform of the environment may)."""
    async with get_db(request).read() as session:
        return await invitations_service.get_invitation(session, tenant=principal.tenant, code=invitationCode)


@router.post(
    "/invitations/{invitationCode}/claim",
    operation_id="claimInvitation",
    openapi_extra=INVITATION_CLAIM_EXAMPLES,
    response_model=UmaInvitation,
)
async def claim_invitation(
    invitationCode: str, body: UmaInvitationClaimRequest, request: Request, principal: Principal = Manager
) -> UmaInvitation:
    """Claim an invitation for one of your customers; the creating platform gets INVITATION_CLAIMED."""
    async with get_db(request).transaction() as session:
        return await invitations_service.claim_invitation(
            session, tenant=principal.tenant, code=invitationCode, invitee_uma=body.invitee_uma
        )


@router.post(
    "/invitations/{invitationCode}/cancel",
    operation_id="cancelInvitation",
    response_model=UmaInvitation,
    responses={403: {"description": "another platform created the invitation"}},
)
async def cancel_invitation(
    invitationCode: str, request: Request, principal: Principal = Manager
) -> UmaInvitation:
    """Cancel a pending invitation (only the platform that created it may)."""
    async with get_db(request).transaction() as session:
        return await invitations_service.cancel_invitation(
            session, tenant=principal.tenant, code=invitationCode
        )


@page_router.get(f"{invitations_service.PAGE_PATH}/{{invitationCode}}", response_class=HTMLResponse)
async def invitation_page(invitationCode: str, request: Request) -> HTMLResponse:
    """The invitation page at an invitation's url."""
    async with get_db(request).read() as session:
        found = await invitations_service.for_page(session, code=invitationCode)
    if found is None:
        return HTMLResponse(page.render_not_found(), status_code=404, headers=page.HEADERS)
    invitation, sandbox = found
    status, html = page.render(invitation, sandbox=sandbox)
    return HTMLResponse(html, status_code=status, headers=page.HEADERS)
