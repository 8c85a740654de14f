"""The MCP tools: one per agent operation (SPEC §4.2), described as data.

Each tool's arguments are the API request body's fields under their API (camelCase) names, the path ids
under their API names and, on money tools, `idempotencyKey`; the argument and output schemas come from the
API's own pydantic models (no hand-written JSON Schema). `permission` names the policy permission without
which the tool is not listed (least privilege; the API still enforces everything)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from platpay.accounts.schemas import (
    ExternalAccount,
    ExternalAccountCreateRequest,
    ExternalAccountListResponse,
    InternalAccountListResponse,
    InternalAccountType,
)
from platpay.agents.dry_run.schemas import AgentPolicyEvaluateRequest, AgentPolicyEvaluation
from platpay.agents.schemas import Agent, AgentAction, AgentActionListResponse, AgentActionStatus
from platpay.payments.quotes.schemas import Quote, QuoteRequest
from platpay.payments.schemas import (
    TransactionListResponse,
    TransactionOneOf,
    TransactionStatus,
    TransactionType,
    TransferInRequest,
    TransferOutRequest,
)

Kind = Literal["read", "money", "write", "delete", "wait"]

Limit = Annotated[int | None, Field(ge=1, le=100, description="page size (1-100, default 20)")]
Cursor = Annotated[str | None, Field(max_length=512, description="`nextCursor` from the previous page")]
PAGE = {"limit": (Limit, None), "cursor": (Cursor, None)}
IDEMPOTENCY_KEY = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=255,
        description="retry the same call with the same key and it executes once; generated when absent "
        "and returned in the result (_meta.idempotencyKey)",
    ),
]
WAIT_SECONDS = Annotated[
    float, Field(ge=0, le=60, description="how long to wait for a decision (0-60 s, default 30)")
]


class ExternalAccountRemoved(BaseModel):
    """remove_external_account's result: the API's DELETE answers 204 without a body, so the tool says what
    it removed."""

    model_config = ConfigDict(populate_by_name=True)

    external_account_id: str = Field(alias="externalAccountId", description="the removed account's id")
    removed: Literal[True] = Field(description="always true: the account is deleted")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    method: str
    path: str  # under the API base URL; `{name}` placeholders are path ids (tool arguments of that name)
    kind: Kind
    output: Any  # the result's model: the API response body's, or `empty`'s for an API answer without one
    body: type[BaseModel] | None = None
    query: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # API name -> (annotation, default)
    permission: str | None = None
    exclude: tuple[str, ...] = ()  # body fields the agent operation infers (not tool arguments)
    # The result when the API answers without a body (204), from the call's arguments.
    empty: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    @property
    def path_ids(self) -> list[str]:
        return [part[1:-1] for part in self.path.split("/") if part.startswith("{")]

    @property
    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.kind in ("read", "wait"),
            destructive_hint=self.kind in ("money", "delete"),
            idempotent_hint=self.kind in ("read", "wait", "delete"),
            open_world_hint=self.kind == "money",
        )

    def parameters(self) -> list[inspect.Parameter]:
        """The tool's arguments: path ids, body fields (by their API names), query fields, the idempotency key."""
        params = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[str, Field(min_length=1)]
            )
            for name in self.path_ids
        ]
        if self.body is not None:
            for name, info in self.body.model_fields.items():
                if (info.alias or name) in self.exclude:
                    continue
                # a type built at run time (mypy reads `Annotated[...]` as a static type expression)
                annotation = Annotated[(info.annotation, *info.metadata, Field(description=info.description))]  # type: ignore[name-defined]
                default = inspect.Parameter.empty if info.is_required() else info.default
                params.append(
                    inspect.Parameter(
                        info.alias or name,
                        inspect.Parameter.KEYWORD_ONLY,
                        annotation=annotation,
                        default=default,
                    )
                )
        for name, (annotation, default) in self.query.items():
            params.append(
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
                )
            )
        if self.kind == "money":
            params.append(
                inspect.Parameter(
                    "idempotencyKey", inspect.Parameter.KEYWORD_ONLY, annotation=IDEMPOTENCY_KEY, default=None
                )
            )
        if self.kind == "wait":
            params.append(
                inspect.Parameter(
                    "timeoutSeconds", inspect.Parameter.KEYWORD_ONLY, annotation=WAIT_SECONDS, default=30.0
                )
            )
        return params


def _opt(annotation: Any, description: str) -> tuple[Any, Any]:
    return (Annotated[annotation | None, Field(description=description)], None)


TIMESTAMP = datetime

SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "get_me",
        "The agent: profile, policy, usage",
        "This agent's profile, its policy (permissions, limits, approval thresholds) and today's and this "
        "month's usage (UTC).",
        "GET",
        "/agents/me",
        "read",
        output=Agent,
    ),
    ToolSpec(
        "list_internal_accounts",
        "List internal accounts",
        "The customer's internal accounts this agent may use, with balances (minor units).",
        "GET",
        "/agents/me/internal-accounts",
        "read",
        output=InternalAccountListResponse,
        query={
            "currency": _opt(str, "a currency code"),
            "type": _opt(InternalAccountType, "account type"),
            **PAGE,
        },
    ),
    ToolSpec(
        "list_external_accounts",
        "List external accounts",
        "The customer's external (bank, wallet) accounts.",
        "GET",
        "/agents/me/external-accounts",
        "read",
        output=ExternalAccountListResponse,
        query={"currency": _opt(str, "a currency code"), **PAGE},
        permission="MANAGE_EXTERNAL_ACCOUNTS",
    ),
    ToolSpec(
        "add_external_account",
        "Add an external account",
        "Register an external account of the agent's customer (customerId is inferred).",
        "POST",
        "/agents/me/external-accounts",
        "write",
        output=ExternalAccount,
        body=ExternalAccountCreateRequest,
        permission="MANAGE_EXTERNAL_ACCOUNTS",
        exclude=("customerId",),
    ),
    ToolSpec(
        "remove_external_account",
        "Remove an external account",
        "Delete one of the customer's external accounts.",
        "DELETE",
        "/agents/me/external-accounts/{externalAccountId}",
        "delete",
        output=ExternalAccountRemoved,
        permission="MANAGE_EXTERNAL_ACCOUNTS",
        empty=lambda arguments: {"externalAccountId": arguments["externalAccountId"], "removed": True},
    ),
    ToolSpec(
        "create_quote",
        "Create a quote",
        "Lock a price from the customer's internal account; execute it with execute_quote before it expires.",
        "POST",
        "/agents/me/quotes",
        "money",
        output=Quote,
        body=QuoteRequest,
        permission="CREATE_QUOTES",
    ),
    ToolSpec(
        "get_quote",
        "Get a quote",
        "A quote this agent created.",
        "GET",
        "/agents/me/quotes/{quoteId}",
        "read",
        output=Quote,
        permission="CREATE_QUOTES",
    ),
    ToolSpec(
        "execute_quote",
        "Execute a quote",
        "Execute a quote this agent created. Moves money. Returns the AgentAction: APPROVED (with its "
        "transaction) or PENDING_APPROVAL (a person must approve; use wait_for_action).",
        "POST",
        "/agents/me/quotes/{quoteId}/execute",
        "money",
        output=AgentAction,
        permission="EXECUTE_QUOTES",
    ),
    ToolSpec(
        "transfer_in",
        "Transfer in",
        "Pull from the customer's external account into its internal account (amount in minor units). "
        "Returns the AgentAction: APPROVED or PENDING_APPROVAL.",
        "POST",
        "/agents/me/transfer-in",
        "money",
        output=AgentAction,
        body=TransferInRequest,
        permission="CREATE_TRANSFERS",
    ),
    ToolSpec(
        "transfer_out",
        "Transfer out",
        "Send from the customer's internal account to its external account (amount in minor units). Moves "
        "money. Returns the AgentAction: APPROVED (with its transaction) or PENDING_APPROVAL (use "
        "wait_for_action). A request past a limit is refused with the rule named.",
        "POST",
        "/agents/me/transfer-out",
        "money",
        output=AgentAction,
        body=TransferOutRequest,
        permission="CREATE_TRANSFERS",
    ),
    ToolSpec(
        "list_transactions",
        "List transactions",
        "The customer's transactions, newest first.",
        "GET",
        "/agents/me/transactions",
        "read",
        output=TransactionListResponse,
        query={
            "status": _opt(TransactionStatus, "transaction status (card transactions have none of these)"),
            "type": _opt(TransactionType, "INCOMING or OUTGOING (either excludes card transactions)"),
            "reference": _opt(str, "the transaction's reference"),
            "startDate": _opt(TIMESTAMP, "created at or after (ISO 8601)"),
            "endDate": _opt(TIMESTAMP, "created before (ISO 8601)"),
            **PAGE,
        },
    ),
    ToolSpec(
        "get_transaction",
        "Get a transaction",
        "One of the customer's transactions.",
        "GET",
        "/agents/me/transactions/{transactionId}",
        "read",
        output=TransactionOneOf,
    ),
    ToolSpec(
        "list_actions",
        "List this agent's actions",
        "This agent's actions (money requests and their decisions), newest first.",
        "GET",
        "/agents/me/actions",
        "read",
        output=AgentActionListResponse,
        query={"status": _opt(AgentActionStatus, "filter by status"), **PAGE},
    ),
    ToolSpec(
        "get_action",
        "Get an action",
        "One of this agent's actions: APPROVED, PENDING_APPROVAL, REJECTED or FAILED.",
        "GET",
        "/agents/me/actions/{actionId}",
        "read",
        output=AgentAction,
    ),
    ToolSpec(
        "check_policy",
        "Check the policy (dry-run)",
        "Ask what the policy would decide for a money request now, changing nothing: ALLOW, NEEDS_APPROVAL or "
        "DENY, the rule that decided, why, and the headroom left on each limit (policy currency; null: no "
        "limit). type is TRANSFER_OUT or TRANSFER_IN (with source, destination, amount) or EXECUTE_QUOTE "
        "(with quoteId).",
        "POST",
        "/agents/me/policy/evaluate",
        "read",
        output=AgentPolicyEvaluation,
        body=AgentPolicyEvaluateRequest,
    ),
    ToolSpec(
        "wait_for_action",
        "Wait for a decision",
        "Wait (at most timeoutSeconds) until an action pending approval is decided, then return it; returns "
        "it still PENDING_APPROVAL when the wait ends first. Only a person with platform credentials can "
        "approve or reject.",
        "GET",
        "/agents/me/actions/{actionId}",
        "wait",
        output=AgentAction,
    ),
)
