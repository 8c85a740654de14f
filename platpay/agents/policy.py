"""An agent's policy and the one function that judges a request against it.

`evaluate(policy, usage, request, rates, now)` is pure (no I/O, no clock of its own): enforcement calls it
inside the request's transaction with the agent's usage row locked, approval calls it again against the
state of that moment, and a dry-run can call it to explain a decision without changing anything. Every
decision names the `rule` that decided it, a human `reason`, and what `remaining` headroom the limits leave
(in the policy currency, None where there is no limit), before this request.

Order of the checks (the first that refuses decides):

1. the agent is paused                                     → Deny  `isPaused`
2. the permission the operation needs                      → Deny  `permissions`
3. `accountRestrictions.allowedAccountIds`                 → Deny  `accountRestrictions.allowedAccountIds`
4. an account rule's `perTransactionLimit` (the account's currency)
                                                           → Deny  `accountRestrictions.accountRules.perTransactionLimit`
5. the amount in the policy currency (other currencies at the evaluation-time mid rate, rounded up);
   no rate                                                 → Deny  `spendingLimits.currency`
6. `spendingLimits.perTransactionLimit`, `dailyTransactionLimit`, `dailyLimit`, `monthlyLimit` against the
   usage of the current UTC day and month (executed plus pending approval)
                                                           → Deny  `spendingLimits.<field>`
7. the execution mode: the account rule's `executionMode`, else `defaultExecutionMode`; APPROVAL_REQUIRED
                                                           → NeedsApproval
8. `approvalThresholds.amount` (in its own currency): above it → NeedsApproval, even in AUTO
9. otherwise                                               → Allow
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from math import ceil
from typing import Any

PERMISSIONS = ("MANAGE_EXTERNAL_ACCOUNTS", "CREATE_TRANSFERS", "CREATE_QUOTES", "EXECUTE_QUOTES")
# The reference also lists VIEW_TRANSACTIONS; SPEC names four. It is accepted (a policy written for the
# reference keeps working) and grants nothing: reads need no permission (SPEC §4.2).
ACCEPTED_PERMISSIONS = (*PERMISSIONS, "VIEW_TRANSACTIONS")
AUTO, APPROVAL_REQUIRED = "AUTO", "APPROVAL_REQUIRED"

# The permission each operation needs.
NEEDS = {
    "TRANSFER_OUT": "CREATE_TRANSFERS",
    "TRANSFER_IN": "CREATE_TRANSFERS",
    "EXECUTE_QUOTE": "EXECUTE_QUOTES",
    "CREATE_QUOTE": "CREATE_QUOTES",
}
MONEY_OPERATIONS = frozenset({"TRANSFER_OUT", "TRANSFER_IN", "EXECUTE_QUOTE"})

# Minor units of the policy currency per minor unit of another currency, or None when there is no rate.
Rates = Callable[[str, str], Fraction | None]


@dataclass(frozen=True, slots=True)
class Usage:
    """What the agent has used in the day and month `day`/`month` (UTC), in the policy currency."""

    day: str  # YYYY-MM-DD
    daily_spend: int
    daily_count: int
    month: str  # YYYY-MM
    monthly_spend: int

    def as_of(self, now: datetime) -> Usage:
        """The counters that apply at `now`: a new UTC day (month) starts from zero."""
        day = utc_day(now)
        month = day[:7]  # (utc_month's)
        return Usage(
            day=day,
            daily_spend=self.daily_spend if self.day == day else 0,
            daily_count=self.daily_count if self.day == day else 0,
            month=month,
            monthly_spend=self.monthly_spend if self.month == month else 0,
        )

    def plus(self, amount: int, count: int = 1) -> Usage:
        return Usage(
            day=self.day,
            daily_spend=self.daily_spend + amount,
            daily_count=self.daily_count + count,
            month=self.month,
            monthly_spend=self.monthly_spend + amount,
        )


def utc_day(now: datetime) -> str:
    return now.astimezone(UTC).date().isoformat()


def utc_month(now: datetime) -> str:
    return utc_day(now)[:7]


@dataclass(frozen=True, slots=True)
class Request:
    """What the agent asks for: `operation` (TRANSFER_OUT, TRANSFER_IN, EXECUTE_QUOTE, CREATE_QUOTE) moving
    `amount` minor units of `currency` through its internal account `account_id`."""

    operation: str
    account_id: str | None
    amount: int
    currency: str
    agent_paused: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    rule: str | None
    reason: str
    remaining: dict[str, int | None] = field(default_factory=dict)
    amount: int | None = None  # the request's amount in the policy currency
    rate: str | None = None  # the conversion rate used, when one was

    kind = "DECISION"

    def details(self) -> dict[str, Any]:
        """The decision as API error details and dry-run bodies show it."""
        body: dict[str, Any] = {
            "decision": self.kind,
            "rule": self.rule,
            "reason": self.reason,
            "remaining": self.remaining,
        }
        if self.rate is not None:
            body["rate"] = self.rate
        return body


@dataclass(frozen=True, slots=True)
class Allow(Decision):
    kind = "ALLOW"


@dataclass(frozen=True, slots=True)
class NeedsApproval(Decision):
    kind = "NEEDS_APPROVAL"


@dataclass(frozen=True, slots=True)
class Deny(Decision):
    kind = "DENY"


def _limits(policy: dict[str, Any]) -> dict[str, Any]:
    return policy.get("spendingLimits") or {}


def remaining(policy: dict[str, Any], usage: Usage) -> dict[str, int | None]:
    """Headroom per limit in the policy currency (None: no such limit), never below zero."""
    limits = _limits(policy)

    def left(limit: int | None, used: int) -> int | None:
        return None if limit is None else max(limit - used, 0)

    return {
        "perTransaction": limits.get("perTransactionLimit"),
        "daily": left(limits.get("dailyLimit"), usage.daily_spend),
        "dailyCount": left(limits.get("dailyTransactionLimit"), usage.daily_count),
        "monthly": left(limits.get("monthlyLimit"), usage.monthly_spend),
    }


def convert(amount: int, currency: str, target: str, rates: Rates) -> tuple[int, str | None] | None:
    """`amount` minor units of `currency` in minor units of `target` (rounded up: a limit is never
    undercounted) and the rate used; None when there is no rate."""
    if currency == target:
        return amount, None
    rate = rates(currency, target)
    if rate is None:
        return None
    return ceil(amount * rate), _rate_text(rate)


def _rate_text(rate: Fraction) -> str:
    return f"{rate.numerator / rate.denominator:.12g}"


def account_rule(policy: dict[str, Any], account_id: str | None) -> dict[str, Any] | None:
    for rule in (policy.get("accountRestrictions") or {}).get("accountRules") or ():
        if rule.get("accountId") == account_id:
            return rule
    return None


def evaluate(policy: dict[str, Any], usage: Usage, request: Request, rates: Rates, now: datetime) -> Decision:
    """Judge `request` against `policy` given the agent's `usage` (any day: it is taken as of `now`)."""
    usage = usage.as_of(now)
    left = remaining(policy, usage)
    if request.agent_paused:
        return Deny("isPaused", "the agent is paused: the platform must resume it first", left)
    needed = NEEDS.get(request.operation)
    if needed is not None and needed not in (policy.get("permissions") or ()):
        return Deny("permissions", f"the policy does not grant {needed}", left)
    restrictions = policy.get("accountRestrictions") or {}
    allowed = restrictions.get("allowedAccountIds")
    if allowed is not None and request.account_id is not None and request.account_id not in allowed:
        return Deny(
            "accountRestrictions.allowedAccountIds",
            f"account {request.account_id} is not among the accounts the policy allows",
            left,
        )
    if request.operation not in MONEY_OPERATIONS:
        return Allow(None, "the policy allows this operation", left)
    rule = account_rule(policy, request.account_id) or {}
    account_limit = rule.get("perTransactionLimit")
    if account_limit is not None and request.amount > account_limit:
        return Deny(
            "accountRestrictions.accountRules.perTransactionLimit",
            f"{request.amount} {request.currency} exceeds this account's per-transaction limit of "
            f"{account_limit}",
            left,
        )
    limits = _limits(policy)
    currency = limits.get("currency") or request.currency
    converted = convert(request.amount, request.currency, currency, rates)
    if converted is None:
        return Deny(
            "spendingLimits.currency",
            f"no rate from {request.currency} to the policy currency {currency}",
            left,
        )
    amount, rate = converted

    def deny(rule_name: str, reason: str) -> Deny:
        return Deny(rule_name, reason, left, amount, rate)

    if left["perTransaction"] is not None and amount > left["perTransaction"]:
        return deny(
            "spendingLimits.perTransactionLimit",
            f"{amount} {currency} exceeds the per-transaction limit of {left['perTransaction']}",
        )
    if left["dailyCount"] is not None and left["dailyCount"] < 1:
        return deny(
            "spendingLimits.dailyTransactionLimit",
            f"the daily transaction limit of {limits.get('dailyTransactionLimit')} is reached",
        )
    if left["daily"] is not None and amount > left["daily"]:
        return deny(
            "spendingLimits.dailyLimit",
            f"{amount} {currency} exceeds what remains of the daily limit ({left['daily']})",
        )
    if left["monthly"] is not None and amount > left["monthly"]:
        return deny(
            "spendingLimits.monthlyLimit",
            f"{amount} {currency} exceeds what remains of the monthly limit ({left['monthly']})",
        )
    mode = rule.get("executionMode") or policy.get("defaultExecutionMode") or AUTO
    if mode == APPROVAL_REQUIRED:
        source = (
            "accountRestrictions.accountRules.executionMode"
            if rule.get("executionMode")
            else "defaultExecutionMode"
        )
        return NeedsApproval(source, "the policy requires approval for this account", left, amount, rate)
    thresholds = policy.get("approvalThresholds") or {}
    if thresholds.get("amount") is not None:
        threshold_currency = thresholds.get("currency") or currency
        in_threshold = convert(request.amount, request.currency, threshold_currency, rates)
        if in_threshold is None or in_threshold[0] > thresholds["amount"]:
            return NeedsApproval(
                "approvalThresholds.amount",
                f"above the approval threshold of {thresholds['amount']} {threshold_currency}",
                left,
                amount,
                rate,
            )
    return Allow(None, "within the policy", left, amount, rate)
