"""POST /agents/me/policy/evaluate (agents/dry_run/service.py): the policy's decision on a money request, explained,
changing nothing. Same Bearer credential as every agent operation."""

from __future__ import annotations

from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

from platpay.agents.dry_run import service as dry_run
from platpay.agents.dry_run.schemas import (
    EVALUATE_EXAMPLES,
    AgentPolicyEvaluateRequest,
    AgentPolicyEvaluation,
)
from platpay.agents.me.endpoints import AgentCaller
from platpay.auth.principal import Principal
from platpay.auth.principals import get_db
from platpay.errors import invalid_field
from platpay.kit.routing import api_router

router = api_router(tags=["Agent Operations"])


@router.post(
    "/agents/me/policy/evaluate",
    operation_id="agentEvaluatePolicy",
    openapi_extra=EVALUATE_EXAMPLES,
    response_model=AgentPolicyEvaluation,
)
async def evaluate_policy(
    body: AgentPolicyEvaluateRequest, request: Request, principal: Principal = AgentCaller
) -> JSONResponse:
    """What the policy would decide for this request now, with the rule, the reason and the headroom left;
    changes nothing (the same function judges the real operations)."""
    transfer = body.type in ("TRANSFER_OUT", "TRANSFER_IN")
    if transfer:
        for name in ("source", "destination"):
            if getattr(body, name) is None:
                raise invalid_field(name, f"{body.type} needs {name}")
        if body.quote_id is not None:
            raise invalid_field("quoteId", f"{body.type} takes no quoteId")
        if body.type == "TRANSFER_IN" and body.destination is not None and body.destination.payment_rail:
            raise invalid_field("destination.paymentRail", "a transfer-in takes no paymentRail")
        if body.type == "TRANSFER_IN" and body.amount is None:
            raise invalid_field("amount", "a transfer-in needs an amount")
    else:
        if body.quote_id is None:
            raise invalid_field("quoteId", "EXECUTE_QUOTE needs quoteId")
        for name in ("source", "destination", "amount"):
            if getattr(body, name) is not None:
                raise invalid_field(name, f"EXECUTE_QUOTE takes no {name}")
    evaluation = await dry_run.evaluate(
        get_db(request),
        tenant=principal.tenant,
        agent_id=principal.id,
        operation=body.type,
        source_account_id=body.source.account_id if body.source else None,
        destination_account_id=body.destination.account_id if body.destination else None,
        payment_rail=body.destination.payment_rail if body.destination else None,
        amount=body.amount,
        quote_id=body.quote_id,
        settings=request.app.state.settings,
    )
    # Rendered as is: a null `rule`, `rate` or limit in `remaining` says "none" (not omitted).
    return JSONResponse(
        jsonable_encoder(AgentPolicyEvaluation.model_validate(evaluation).model_dump(by_alias=True))
    )
