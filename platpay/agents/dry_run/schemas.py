"""Request and response bodies of POST /agents/me/policy/evaluate."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from platpay.agents.schemas import AgentActionType
from platpay.kit.api_model import ApiModel, ApiRequest
from platpay.kit.money import MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.payments.schemas import (
    MAX_AMOUNT,
    WHOLE_BALANCE,
    ExternalAccountDestinationReference,
    InternalAccountReference,
)


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
