"""Agents' request and response bodies, named as the reference names them (INTERFACE-FACTS §3.14)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from platpay.kit.api_model import KEPT_WHEN_OMITTED, ApiModel, ApiRequest
from platpay.kit.money import MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.kit.pagination import Page
from platpay.payments.quotes.schemas import Quote
from platpay.payments.schemas import MAX_AMOUNT, TransactionOneOf

AgentPermission = TypeAliasType(
    "AgentPermission",
    Literal[
        "VIEW_TRANSACTIONS", "CREATE_TRANSFERS", "CREATE_QUOTES", "EXECUTE_QUOTES", "MANAGE_EXTERNAL_ACCOUNTS"
    ],
)
AgentExecutionMode = TypeAliasType("AgentExecutionMode", Literal["AUTO", "APPROVAL_REQUIRED"])
AgentActionStatus = TypeAliasType(
    "AgentActionStatus", Literal["PENDING_APPROVAL", "APPROVED", "REJECTED", "FAILED"]
)
AgentActionType = TypeAliasType("AgentActionType", Literal["EXECUTE_QUOTE", "TRANSFER_OUT", "TRANSFER_IN"])
Amount = Annotated[MinorUnits, Field(ge=0, le=MAX_AMOUNT)]
Count = Annotated[int, Field(strict=True, ge=0, le=1_000_000_000)]
CurrencyCode = Annotated[str, Field(min_length=3, max_length=8)]
AccountId = Annotated[str, Field(min_length=1, max_length=64)]


class AgentSpendingLimits(ApiRequest):
    """Limits in the smallest unit of `currency`; other currencies convert at the evaluation-time rate."""

    currency: CurrencyCode
    per_transaction_limit: Amount
    daily_limit: Amount | None = None
    daily_transaction_limit: Count | None = None
    monthly_limit: Amount | None = None


class AgentAccountRule(ApiRequest):
    account_id: AccountId
    execution_mode: AgentExecutionMode | None = None
    per_transaction_limit: Amount | None = Field(
        default=None, description="in the account's currency; null inherits the spending limits"
    )


class AgentAccountRestrictions(ApiRequest):
    allowed_account_ids: list[AccountId] | None = Field(default=None, max_length=100)
    account_rules: list[AgentAccountRule] | None = Field(default=None, max_length=100)


class AgentApprovalThresholds(ApiRequest):
    currency: CurrencyCode | None = Field(default=None, description="required with amount")
    amount: Amount | None = None


class AgentPolicy(ApiRequest):
    permissions: list[AgentPermission] = Field(max_length=10)
    default_execution_mode: AgentExecutionMode
    spending_limits: AgentSpendingLimits
    account_restrictions: AgentAccountRestrictions | None = None
    approval_thresholds: AgentApprovalThresholds | None = None


class AgentUsage(ApiModel):
    daily_transaction_count: int
    daily_spend: int = Field(
        description="today (UTC), in the policy currency, executed plus pending approval"
    )
    daily_reset_date: str | None = Field(default=None, description="the UTC date the daily counters reset")
    monthly_spend: int
    monthly_reset_month: str | None = Field(default=None, description="the month (YYYY-MM) they reset")


class Agent(ApiModel):
    id: str = Field(examples=["Agent:019542f5-b3e7-1d02-0000-000000000001"])
    name: str
    customer_id: str
    is_paused: bool
    is_connected: bool
    policy: AgentPolicy
    usage: AgentUsage
    created_at: datetime
    updated_at: datetime


class AgentListResponse(Page[Agent]):
    """GET /agents."""


class AgentCreateRequest(ApiRequest):
    name: str = Field(min_length=1, max_length=255)
    customer_id: AccountId
    policy: AgentPolicy


class AgentDeviceCode(ApiModel):
    code: str = Field(examples=["PLATPAY-AGENT-X7K9-M2P4-Q8RT-W3HN"])
    agent_id: str
    expires_at: datetime
    redeemed: bool


class AgentCreateResponse(ApiModel):
    agent: Agent
    device_code: AgentDeviceCode


class AgentTransferDetails(ApiModel):
    amount: int
    currency: str
    source_account_id: str
    destination_account_id: str


class AgentAction(ApiModel):
    id: str = Field(examples=["AgentAction:019542f5-b3e7-1d02-0000-000000000099"])
    agent_id: str
    customer_id: str
    platform_customer_id: str
    status: AgentActionStatus
    type: AgentActionType
    quote: Quote | None = None
    transfer_details: AgentTransferDetails | None = None
    transaction: TransactionOneOf | None = None
    rejection_reason: str | None = None
    failure_reason: str | None = Field(
        default=None, description="FAILED only: why it could not execute (code, then a colon and a message)"
    )
    policy_decision: dict[str, Any] | None = Field(
        default=None,
        description="the policy's decision on the request, as a refusal's details and the dry-run show it: "
        "decision (ALLOW | NEEDS_APPROVAL), rule, reason, remaining (headroom before this request), rate",
    )
    created_at: datetime
    updated_at: datetime


class AgentActionListResponse(Page[AgentAction]):
    """GET /agents/approvals and GET /agents/me/actions."""


class AgentUpdateRequest(ApiRequest):
    name: Annotated[str | None, KEPT_WHEN_OMITTED] = Field(default=None, min_length=1, max_length=255)
    is_paused: Annotated[bool | None, KEPT_WHEN_OMITTED] = None


class AgentSpendingLimitsUpdate(ApiRequest):
    currency: CurrencyCode | None = None
    per_transaction_limit: Amount | None = None
    daily_limit: Amount | None = None
    daily_transaction_limit: Count | None = None
    monthly_limit: Amount | None = None


class AgentPolicyUpdateRequest(ApiRequest):
    permissions: list[AgentPermission] | None = Field(default=None, max_length=10)
    default_execution_mode: AgentExecutionMode | None = None
    spending_limits: AgentSpendingLimitsUpdate | None = None
    account_restrictions: AgentAccountRestrictions | None = None
    approval_thresholds: AgentApprovalThresholds | None = None


class AgentActionRejectRequest(ApiRequest):
    reason: str | None = Field(default=None, max_length=1000)


class AgentDeviceCodeStatusResponse(ApiModel):
    code: str
    redeemed: bool


class AgentDeviceCodeRedeemResponse(ApiModel):
    agent_id: str
    agent_name: str
    access_token: str = Field(description="shown once: `Authorization: Bearer <accessToken>`")
    policy: AgentPolicy


_POLICY = {
    "permissions": ["CREATE_TRANSFERS", "CREATE_QUOTES", "EXECUTE_QUOTES", "MANAGE_EXTERNAL_ACCOUNTS"],
    "defaultExecutionMode": "AUTO",
    "spendingLimits": {
        "currency": "USD",
        "perTransactionLimit": 50000,
        "dailyLimit": 500000,
        "dailyTransactionLimit": 20,
        "monthlyLimit": 5000000,
    },
    "approvalThresholds": {"currency": "USD", "amount": 25000},
}
AGENT_CREATE_EXAMPLES = request_examples(
    payrollAgent=(
        "An agent paying out for a customer, approval above $250",
        {"name": "Payroll Agent", "customerId": ExampleIds.CUSTOMER, "policy": _POLICY},
    )
)
AGENT_UPDATE_EXAMPLES = request_examples(pause=("Pause the agent", {"isPaused": True}))
AGENT_POLICY_UPDATE_EXAMPLES = request_examples(
    raiseDailyLimit=(
        "Raise the daily limit and drop the monthly one",
        {"spendingLimits": {"dailyLimit": 1000000, "monthlyLimit": None}},
    )
)
AGENT_REJECT_EXAMPLES = request_examples(
    reject=("Reject with a reason", {"reason": "The customer did not recognise this payment"})
)
AGENT_QUOTE_EXAMPLES = request_examples(
    accountToAccount=(
        "Send $100 from the customer's internal account to its Mexican bank account (CLABE), paid in MXN",
        {
            "source": {"sourceType": "ACCOUNT", "accountId": ExampleIds.INTERNAL_ACCOUNT},
            "destination": {"destinationType": "ACCOUNT", "accountId": ExampleIds.MXN_EXTERNAL_ACCOUNT},
            "lockedCurrencySide": "SENDING",
            "lockedCurrencyAmount": 10000,
            "description": "Invoice 1234",
        },
    )
)
AGENT_EXTERNAL_ACCOUNT_EXAMPLES = request_examples(
    usBankAccount=(
        "A US bank account of the agent's customer (customerId inferred)",
        {
            "currency": "USD",
            "accountInfo": {
                "accountType": "USD_ACCOUNT",
                "accountNumber": "44455566677",
                "routingNumber": "011000015",
                "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
            },
        },
    )
)
