"""Request bodies of incoming UMA payments: the sandbox simulation and the platform's approve / reject."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from platpay.kit.api_model import ApiRequest
from platpay.kit.money import MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.payments.schemas import MAX_AMOUNT


class SandboxUmaReceiveRequest(ApiRequest):
    sender_uma_address: str = Field(
        min_length=1,
        max_length=320,
        description="a sandbox UMA address: $success.<ccy>@sandbox.uma.money, $pending.long.<ccy>@… or "
        "$fail.compliance.<ccy>@…",
        examples=["$success.usd@sandbox.uma.money"],
    )
    receiver_uma_address: str | None = Field(
        default=None,
        min_length=1,
        max_length=320,
        description="the receiving customer's UMA address (give this or customerId, not both)",
    )
    customer_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="the receiving customer (give this or receiverUmaAddress, not both)",
    )
    receiving_currency_code: str = Field(
        min_length=1, max_length=8, description="the currency the customer receives", examples=["USD"]
    )
    receiving_currency_amount: MinorUnits = Field(
        gt=0, le=MAX_AMOUNT, description="minor units of receivingCurrencyCode to receive"
    )


class ApprovePaymentRequest(ApiRequest):
    receiver_customer_info: dict[str, Any] | None = Field(
        default=None,
        max_length=50,
        description="the receiver's information keyed by CustomerInfoFieldName; must cover the mandatory "
        "requestedReceiverCustomerInfoFields of the INCOMING_PAYMENT.PENDING webhook",
        examples=[{"COUNTRY_OF_RESIDENCE": "US"}],
    )


class RejectPaymentRequest(ApiRequest):
    reason: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="why (kept on the transaction's failureDetails for your own use)",
        examples=["RESTRICTED_JURISDICTION"],
    )


SANDBOX_RECEIVE_EXAMPLES = request_examples(
    receiveUsd=(
        "A UMA payment of $50 arrives for a customer",
        {
            "senderUmaAddress": "$success.usd@sandbox.uma.money",
            "customerId": ExampleIds.CUSTOMER,
            "receivingCurrencyCode": "USD",
            "receivingCurrencyAmount": 5000,
        },
    )
)
APPROVE_PAYMENT_EXAMPLES = request_examples(
    approve=(
        "Approve, with the receiver's information asked for",
        {"receiverCustomerInfo": {"FULL_NAME": "Jane Doe"}},
    )
)
REJECT_PAYMENT_EXAMPLES = request_examples(
    reject=("Reject, saying why", {"reason": "RESTRICTED_JURISDICTION"})
)
