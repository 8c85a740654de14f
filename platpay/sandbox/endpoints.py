"""The sandbox's time control (/sandbox/clock...) and per-tenant reset (/sandbox/reset): sandbox credentials
only (production ones get 403, as every /sandbox route answers)."""

from __future__ import annotations

from fastapi import Body, Depends, Request

from platpay.auth.principal import Principal
from platpay.auth.principals import get_db, require_sandbox
from platpay.auth.schemas import Permission
from platpay.clocks import service as clocks_service
from platpay.errors import invalid_field
from platpay.kit.openapi import request_examples
from platpay.kit.routing import api_router
from platpay.sandbox import service
from platpay.sandbox.schemas import SandboxClock, SandboxClockAdvanceRequest, SandboxResetResponse

router = api_router(tags=["Sandbox"])

ADVANCE_EXAMPLES = request_examples(
    seconds=("Move forward five minutes and one second (a quote's expiry)", {"seconds": 301}),
    days=("Move forward three days (a bank return)", {"seconds": 259200}),
    to=("Move to a given instant", {"to": "2031-01-01T00:00:00Z"}),
)


def _clock(found: clocks_service.ClockView) -> SandboxClock:
    return SandboxClock(
        now=found.now,
        frozen=found.frozen,
        offset_seconds=found.offset_seconds,
        jobs_run=found.jobs_run,
    )


@router.get("/sandbox/clock", operation_id="getSandboxClock", response_model=SandboxClock)
async def get_clock(principal: Principal = Depends(require_sandbox(Permission.VIEW))) -> SandboxClock:
    """The sandbox tenant's clock (sandbox only)."""
    return _clock(clocks_service.view(principal.tenant.clock))


@router.post(
    "/sandbox/clock/advance",
    operation_id="advanceSandboxClock",
    response_model=SandboxClock,
    openapi_extra=ADVANCE_EXAMPLES,
)
async def advance_clock(
    request: Request,
    body: SandboxClockAdvanceRequest = Body(...),
    principal: Principal = Depends(require_sandbox(Permission.MANAGE)),
) -> SandboxClock:
    """Move the sandbox tenant's clock forward by `seconds` or to `to`; everything that became due (quote
    expiries, settlement steps, bank returns, approval timeouts...) has run, in due order, when it answers."""
    if (body.seconds is None) == (body.to is None):
        raise invalid_field("seconds", "give seconds or to, exactly one")
    return _clock(
        await clocks_service.advance(
            get_db(request),
            request.app.state.settings,
            tenant_id=principal.tenant.id,
            seconds=body.seconds,
            to=body.to,
        )
    )


@router.post("/sandbox/clock/freeze", operation_id="freezeSandboxClock", response_model=SandboxClock)
async def freeze_clock(
    request: Request, principal: Principal = Depends(require_sandbox(Permission.MANAGE))
) -> SandboxClock:
    """Stop the sandbox tenant's clock where it stands: nothing falls due until it moves again."""
    return _clock(await clocks_service.freeze(get_db(request), tenant_id=principal.tenant.id))


@router.post("/sandbox/clock/unfreeze", operation_id="unfreezeSandboxClock", response_model=SandboxClock)
async def unfreeze_clock(
    request: Request, principal: Principal = Depends(require_sandbox(Permission.MANAGE))
) -> SandboxClock:
    """Let the sandbox tenant's clock run again from where it was frozen."""
    return _clock(await clocks_service.unfreeze(get_db(request), tenant_id=principal.tenant.id))


@router.post(
    "/sandbox/clock/reset",
    operation_id="resetSandboxClock",
    response_model=SandboxClock,
    responses={409: {"description": "the clock is ahead of real time: resetting would move it backwards"}},
)
async def reset_clock(
    request: Request, principal: Principal = Depends(require_sandbox(Permission.MANAGE))
) -> SandboxClock:
    """Put the sandbox tenant back on real time, when that does not move its clock backwards (else 409)."""
    return _clock(
        await clocks_service.reset(get_db(request), request.app.state.settings, tenant_id=principal.tenant.id)
    )


@router.post("/sandbox/reset", operation_id="resetSandbox", response_model=SandboxResetResponse)
async def reset_sandbox(
    request: Request, principal: Principal = Depends(require_sandbox(Permission.MANAGE))
) -> SandboxResetResponse:
    """Delete every customer, account, transaction, quote, ledger entry, job, event and delivery of the
    sandbox tenant, in one transaction; its credentials, configuration and clock stay, and the platform's
    internal accounts are opened again, empty."""
    async with get_db(request).transaction() as session:
        deleted = await service.reset(session, tenant=principal.tenant)
    return SandboxResetResponse(deleted=deleted)
