"""Invitation request and response bodies (INTERFACE-FACTS §3.11): the code is both SPEC's `invitationCode`
and the reference's `code` (DRIFT-2026-08 §3, ruling "both")."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from platpay.kit.api_model import ApiModel, ApiRequest, FromString
from platpay.kit.money import CurrencyAmount, MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.kit.routing import QueryTimestamp

MAX_AMOUNT = 9_000_000_000_000_000


class UmaInvitationCreateRequest(ApiRequest):
    """POST /invitations: an invitation from one of the platform's customers (`inviterUma`)."""

    inviter_uma: str = Field(
        min_length=3, max_length=320, description="the UMA address of the inviting customer"
    )
    first_name: str | None = Field(
        default=None, min_length=1, max_length=100, description="the invitee's first name, shown on the page"
    )
    amount_to_send: MinorUnits | None = Field(
        default=None,
        gt=0,
        le=MAX_AMOUNT,
        description="minor units of the inviter's first currency; display only: the inviting platform pays "
        "after INVITATION_CLAIMED",
    )
    expires_at: Annotated[QueryTimestamp, *FromString] | None = Field(
        default=None, description="ISO 8601, in the future; absent: the invitation never expires"
    )


class UmaInvitationClaimRequest(ApiRequest):
    """POST /invitations/{invitationCode}/claim: one of the claiming platform's customers."""

    invitee_uma: str = Field(
        min_length=3, max_length=320, description="the UMA address of the customer claiming the invitation"
    )


class UmaInvitation(ApiModel):
    code: str = Field(
        examples=["7mq4xk2p9d3a"],
        description="the invitation's code: the reference's name for invitationCode",
    )
    invitation_code: str = Field(examples=["7mq4xk2p9d3a"], description="the invitation's code (SPEC's name)")
    created_at: datetime
    claimed_at: datetime | None = None
    url: str = Field(description="the invitation's page, served by platpay; it shows the current status")
    expires_at: datetime | None = None
    inviter_uma: str
    invitee_uma: str | None = None
    status: Literal["PENDING", "CLAIMED", "EXPIRED", "CANCELLED"]
    first_name: str | None = None
    amount_to_send: CurrencyAmount | None = None


INVITATION_CREATE_EXAMPLES = request_examples(
    plain=("An invitation", {"inviterUma": ExampleIds.CUSTOMER_UMA}),
    sendByLink=(
        "Send $125.50 by link, valid until the end of 2099",
        {
            "inviterUma": ExampleIds.CUSTOMER_UMA,
            "firstName": "Alice",
            "amountToSend": 12550,
            "expiresAt": "2099-12-31T23:59:59Z",
        },
    ),
)
INVITATION_CLAIM_EXAMPLES = request_examples(
    claim=("Claim for one of your customers", {"inviteeUma": ExampleIds.INVITEE_UMA})
)
