"""agents/policy.py `evaluate`: the pure judgement of an agent's request, case by case and by property."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from platpay.agents.policy import (
    Allow,
    Deny,
    NeedsApproval,
    Request,
    Usage,
    evaluate,
    utc_day,
)

NOW = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)
TODAY = Usage(day="2026-03-15", daily_spend=0, daily_count=0, month="2026-03", monthly_spend=0)
# 1 EUR minor unit = 1.1 USD minor units; no rate to XYZ
RATES = {("EUR", "USD"): Fraction(11, 10), ("USD", "EUR"): Fraction(10, 11)}


def rates(source: str, target: str) -> Fraction | None:
    return RATES.get((source, target))


def policy(**changes):
    base = {
        "permissions": ["CREATE_TRANSFERS", "CREATE_QUOTES", "EXECUTE_QUOTES", "MANAGE_EXTERNAL_ACCOUNTS"],
        "defaultExecutionMode": "AUTO",
        "spendingLimits": {
            "currency": "USD",
            "perTransactionLimit": 10_000,
            "dailyLimit": 50_000,
            "dailyTransactionLimit": 5,
            "monthlyLimit": 200_000,
        },
    }
    base.update(changes)
    return base


def out(amount=1_000, currency="USD", account="InternalAccount:a", operation="TRANSFER_OUT", paused=False):
    return Request(
        operation=operation, account_id=account, amount=amount, currency=currency, agent_paused=paused
    )


def judge(pol, request, usage=TODAY, now=NOW):
    return evaluate(pol, usage, request, rates, now)


class TestPermissions:
    @pytest.mark.parametrize(
        ("operation", "permission"),
        [
            ("TRANSFER_OUT", "CREATE_TRANSFERS"),
            ("TRANSFER_IN", "CREATE_TRANSFERS"),
            ("EXECUTE_QUOTE", "EXECUTE_QUOTES"),
            ("CREATE_QUOTE", "CREATE_QUOTES"),
        ],
    )
    def test_each_operation_needs_its_permission(self, operation, permission):
        granted = [p for p in policy()["permissions"] if p != permission]
        decision = judge(policy(permissions=granted), out(operation=operation))
        assert isinstance(decision, Deny) and decision.rule == "permissions"
        assert permission in decision.reason
        assert not isinstance(judge(policy(), out(operation=operation)), Deny)

    def test_a_paused_agent_is_refused_before_anything_else(self):
        decision = judge(policy(permissions=[]), out(paused=True))
        assert isinstance(decision, Deny) and decision.rule == "isPaused"


class TestAccountRestrictions:
    def test_only_allowed_accounts(self):
        pol = policy(accountRestrictions={"allowedAccountIds": ["InternalAccount:a"]})
        assert isinstance(judge(pol, out(account="InternalAccount:a")), Allow)
        decision = judge(pol, out(account="InternalAccount:b"))
        assert isinstance(decision, Deny) and decision.rule == "accountRestrictions.allowedAccountIds"

    def test_null_allows_every_account(self):
        pol = policy(accountRestrictions={"allowedAccountIds": None})
        assert isinstance(judge(pol, out(account="InternalAccount:z")), Allow)

    def test_an_account_rule_limits_one_account_in_its_currency(self):
        pol = policy(
            accountRestrictions={
                "accountRules": [{"accountId": "InternalAccount:a", "perTransactionLimit": 500}]
            }
        )
        decision = judge(pol, out(amount=501))
        assert isinstance(decision, Deny)
        assert decision.rule == "accountRestrictions.accountRules.perTransactionLimit"
        assert isinstance(judge(pol, out(amount=500)), Allow)
        assert isinstance(judge(pol, out(amount=501, account="InternalAccount:b")), Allow)

    def test_an_account_rule_sets_its_execution_mode_both_ways(self):
        rules = [
            {"accountId": "InternalAccount:a", "executionMode": "APPROVAL_REQUIRED"},
            {"accountId": "InternalAccount:b", "executionMode": "AUTO"},
        ]
        pol = policy(accountRestrictions={"accountRules": rules})
        decision = judge(pol, out(account="InternalAccount:a"))
        assert isinstance(decision, NeedsApproval)
        assert decision.rule == "accountRestrictions.accountRules.executionMode"
        strict = policy(defaultExecutionMode="APPROVAL_REQUIRED", accountRestrictions={"accountRules": rules})
        assert isinstance(judge(strict, out(account="InternalAccount:b")), Allow)
        assert isinstance(judge(strict, out(account="InternalAccount:c")), NeedsApproval)


class TestSpendingLimits:
    def test_per_transaction(self):
        assert isinstance(judge(policy(), out(amount=10_000)), Allow)
        decision = judge(policy(), out(amount=10_001))
        assert isinstance(decision, Deny) and decision.rule == "spendingLimits.perTransactionLimit"

    def test_daily_amount_counts_what_was_used_today(self):
        used = Usage("2026-03-15", 45_000, 1, "2026-03", 45_000)
        assert isinstance(judge(policy(), out(amount=5_000), used), Allow)
        decision = judge(policy(), out(amount=5_001), used)
        assert isinstance(decision, Deny) and decision.rule == "spendingLimits.dailyLimit"
        assert decision.remaining["daily"] == 5_000

    def test_daily_count(self):
        used = Usage("2026-03-15", 5, 5, "2026-03", 5)
        decision = judge(policy(), out(amount=1), used)
        assert isinstance(decision, Deny) and decision.rule == "spendingLimits.dailyTransactionLimit"

    def test_monthly_amount(self):
        used = Usage("2026-03-15", 0, 0, "2026-03", 195_000)
        decision = judge(policy(), out(amount=5_001), used)
        assert isinstance(decision, Deny) and decision.rule == "spendingLimits.monthlyLimit"

    def test_usage_resets_on_a_new_utc_day_and_month(self):
        yesterday = Usage("2026-03-14", 50_000, 5, "2026-03", 60_000)
        decision = judge(policy(), out(amount=10_000), yesterday)
        assert isinstance(decision, Allow) and decision.remaining["daily"] == 50_000
        assert decision.remaining["monthly"] == 140_000
        last_month = Usage("2026-02-28", 50_000, 5, "2026-02", 200_000)
        assert isinstance(judge(policy(), out(amount=10_000), last_month), Allow)

    def test_a_removed_limit_is_no_limit(self):
        limits = {"currency": "USD", "perTransactionLimit": 10_000}
        used = Usage("2026-03-15", 10**9, 10**6, "2026-03", 10**12)
        decision = judge(policy(spendingLimits=limits), out(amount=10_000), used)
        assert isinstance(decision, Allow)
        assert decision.remaining == {
            "perTransaction": 10_000,
            "daily": None,
            "dailyCount": None,
            "monthly": None,
        }

    def test_other_currencies_convert_at_the_rate_rounded_up(self):
        # 9_091 EUR cents * 1.1 = 10_000.1 -> 10_001 USD cents: over the 10_000 limit
        decision = judge(policy(), out(amount=9_091, currency="EUR"))
        assert isinstance(decision, Deny) and decision.rule == "spendingLimits.perTransactionLimit"
        allowed = judge(policy(), out(amount=9_090, currency="EUR"))
        assert isinstance(allowed, Allow) and allowed.amount == 9_999 and allowed.rate == "1.1"

    def test_no_rate_is_refused(self):
        decision = judge(policy(), out(currency="XYZ"))
        assert isinstance(decision, Deny) and decision.rule == "spendingLimits.currency"


class TestApproval:
    def test_default_mode_approval_required(self):
        decision = judge(policy(defaultExecutionMode="APPROVAL_REQUIRED"), out())
        assert isinstance(decision, NeedsApproval) and decision.rule == "defaultExecutionMode"

    def test_above_the_threshold_needs_approval_even_in_auto(self):
        pol = policy(approvalThresholds={"currency": "USD", "amount": 2_000})
        assert isinstance(judge(pol, out(amount=2_000)), Allow)
        decision = judge(pol, out(amount=2_001))
        assert isinstance(decision, NeedsApproval) and decision.rule == "approvalThresholds.amount"

    def test_a_threshold_in_another_currency_converts(self):
        pol = policy(approvalThresholds={"currency": "EUR", "amount": 1_000})
        assert isinstance(judge(pol, out(amount=1_100)), Allow)  # 1_000 EUR cents
        assert isinstance(judge(pol, out(amount=1_101)), NeedsApproval)

    def test_limits_refuse_before_approval_is_asked(self):
        pol = policy(defaultExecutionMode="APPROVAL_REQUIRED")
        assert isinstance(judge(pol, out(amount=10_001)), Deny)

    def test_reads_and_quote_creation_ignore_limits(self):
        decision = judge(policy(), out(amount=10**12, operation="CREATE_QUOTE"))
        assert isinstance(decision, Allow)


class TestDetails:
    def test_a_decision_explains_itself(self):
        details = judge(policy(), out(amount=10_001)).details()
        assert details["decision"] == "DENY" and details["rule"] == "spendingLimits.perTransactionLimit"
        assert details["remaining"] == {
            "perTransaction": 10_000,
            "daily": 50_000,
            "dailyCount": 5,
            "monthly": 200_000,
        }
        assert judge(policy(), out()).details()["decision"] == "ALLOW"


amounts = st.integers(min_value=1, max_value=100_000)


@given(
    spent=st.integers(min_value=0, max_value=60_000),
    count=st.integers(min_value=0, max_value=6),
    amount=amounts,
)
def test_an_allowed_request_never_takes_usage_past_a_limit(spent, count, amount):
    usage = Usage("2026-03-15", spent, count, "2026-03", spent)
    decision = judge(policy(), out(amount=amount), usage)
    if not isinstance(decision, Deny):
        after = usage.plus(amount)
        assert after.daily_spend <= 50_000
        assert after.daily_count <= 5 and amount <= 10_000 and after.monthly_spend <= 200_000


@given(requests=st.lists(amounts, min_size=1, max_size=40))
def test_a_sequence_of_requests_stays_within_the_daily_limit(requests):
    usage = TODAY
    for amount in requests:
        decision = judge(policy(), out(amount=amount), usage)
        if not isinstance(decision, Deny):
            usage = usage.plus(decision.amount or amount)
    assert usage.daily_spend <= 50_000 and usage.daily_count <= 5


def test_utc_day_of_an_offset_time():

    assert utc_day(datetime(2026, 3, 15, 23, 30, tzinfo=timezone(timedelta(hours=-5)))) == "2026-03-16"
