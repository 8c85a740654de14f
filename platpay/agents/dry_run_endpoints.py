"""POST /agents/me/policy/evaluate (agents/dry_run.py): the policy's decision on a money request, explained,
changing nothing. Same Bearer credential as every agent operation."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from pydantic import Field

from platpay.agents import dry_run
from platpay.agents.me_endpoints import AgentCaller
from platpay.agents.schemas import AgentActionType
from platpay.auth.principal import Principal
from platpay.auth.principals import get_db
from platpay.errors import invalid_field
from platpay.kit.api_model import ApiModel, ApiRequest
from platpay.kit.money import MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.kit.routing import api_router
from platpay.payments.schemas import (
    MAX_AMOUNT,
    WHOLE_BALANCE,
    ExternalAccountDestinationReference,
    InternalAccountReference,
)

router = api_router(tags=["Agent Operations"])


class AgentPolicyEvaluateRequest(ApiRequest):
    """The operation (`type`) and the fields of that operation's request: `source`, `destination`, `amount`
    for transfers (as POST /agents/me/transfer-out or transfer-in take them), `quoteId` for EXECUTE_QUOTE."""

    type: AgentActionType
    source: InternalAccountReference | None = Field(default=None, description="transfers: the source account")
    destination: ExternalAccountDestinationReference | None = Field(
        default=None, description="transfers: the destination account (paymentRail: transfer-out only)"
    )
    amount: Annotated[MinorUnits | None, WHOLE_BALANCE] = Field(
        default=None,
        gt=0,
        le=MAX_AMOUNT,
        description="minor units; a transfer-out without one: the whole balance",
    )
    description: str | None = Field(default=None, max_length=500, description="accepted, not judged")
    quote_id: str | None = Field(
        default=None, min_length=1, max_length=64, description="EXECUTE_QUOTE: the quote"
    )


class AgentPolicyRemaining(ApiModel):
    """Headroom each limit leaves before this request, in the policy currency (null: no such limit)."""

    per_transaction: int | None
    daily: int | None
    daily_count: int | None
    monthly: int | None


class AgentPolicyEvaluation(ApiModel):
    decision: str = Field(description="ALLOW | NEEDS_APPROVAL | DENY")
    rule: str | None = Field(description="the policy field that decided (null: nothing limited it)")
    reason: str
    remaining: AgentPolicyRemaining
    # required (and rendered) even when null, like `rule`: the document then says it may be null
    rate: str | None = Field(description="the conversion rate used, when one was (null: none)")
    evaluated_at: datetime


EVALUATE_EXAMPLES = request_examples(
    transferOut=(
        "Would a $300 transfer-out execute, wait for approval, or be refused?",
        {
            "type": "TRANSFER_OUT",
            "source": {"accountId": ExampleIds.INTERNAL_ACCOUNT},
            "destination": {"accountId": ExampleIds.EXTERNAL_ACCOUNT},
            "amount": 30000,
        },
    )
)


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
