from __future__ import annotations

from typing import Literal

from fastapi import Depends, Query, Request

from platpay.auth.principal import Principal
from platpay.auth.principals import get_db, require_sandbox
from platpay.auth.schemas import Permission
from platpay.kit.pagination import PageParams, page_params
from platpay.kit.routing import api_router
from platpay.messages import service
from platpay.messages.schemas import MailboxMessageListResponse

sandbox_router = api_router(tags=["Sandbox"])


@sandbox_router.get(
    "/sandbox/mailbox", response_model=MailboxMessageListResponse, operation_id="sandboxListMailbox"
)
async def list_mailbox(
    request: Request,
    to: str | None = Query(None, min_length=1, max_length=320, description="recipient, ignoring case"),
    channel: Literal["EMAIL", "SMS"] | None = Query(None),
    category: str | None = Query(None, min_length=1, max_length=64, description="e.g. wallet.otp"),
    params: PageParams = Depends(page_params),
    principal: Principal = Depends(require_sandbox(Permission.VIEW)),
) -> dict:
    """Emails and SMS sent to this sandbox's users, newest first (sandbox only)."""
    async with get_db(request).read() as session:
        page, items = await service.list_mailbox(
            session, tenant_id=principal.tenant.id, params=params, to=to, channel=channel, category=category
        )
    return page.envelope([item.to_api() for item in items])
