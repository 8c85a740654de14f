"""Contact verification's bodies: the customer's `contactVerification` object and the requests of
POST /customers/{customerId}/verify-email|verify-phone[/confirm] (INTERFACE-FACTS §3.1)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from platpay.kit.api_model import ApiModel, ApiRequest, NullRefused
from platpay.kit.openapi import request_examples

ContactVerificationStatus = TypeAliasType("ContactVerificationStatus", Literal["PENDING", "VERIFIED"])


class ContactVerification(ApiModel):
    """Present on a customer only when the provider of one of its currencies requires contact verification,
    with only the channels required: each PENDING until its one-time code is confirmed."""

    email: ContactVerificationStatus | None = None
    phone: ContactVerificationStatus | None = None


class ContactVerificationConfirmRequest(ApiRequest):
    code: str = Field(min_length=1, max_length=32, description="the one-time code; sandbox: always 123456")


class PhoneVerificationRequest(ApiRequest):
    """POST /customers/{customerId}/verify-phone's optional body: the number to send the code to. A customer
    with a `phoneNumber` gets it there (a number named must be that one); one without names the number on
    the first send, and a resend without a body uses the last one named."""

    phone_number: Annotated[str | None, NullRefused("to send to the number the last code went to")] = Field(
        default=None, min_length=3, max_length=16, description="E.164, e.g. +33612345678"
    )


CONFIRM_EXAMPLES = request_examples(
    sandboxCode=("The sandbox's code, always accepted there", {"code": "123456"})
)
PHONE_EXAMPLES = request_examples(
    frenchMobile=("Send the code to a French mobile number", {"phoneNumber": "+33612345678"})
)
