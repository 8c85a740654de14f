"""POST /agents/me/policy/evaluate agrees with the real operation on every case of the table: the dry-run is
asked first, then the same request is made for real, and the decision (with its rule, reason and remaining
headroom where the real call shows them) is the same. The dry-run itself changes nothing.

The customer has two internal accounts (the platform is configured with USD and EUR), each with a bank
account in its currency, so that account restrictions (allowed accounts, per-account rules) are judged with
an account allowed and one not; in the table "SELF" is the USD account and "OTHER" the EUR one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.factories import account_destination, account_source, create_platform, fund, internal_account
from tests.support.agents import balance, connect, funded_customer, policy, transfer_out

LIMITS = policy()["spendingLimits"]
EUR_BANK = {
    "accountType": "EUR_ACCOUNT",
    "iban": "DE89370400440532013000",
    "swiftCode": "COBADEFFXXX",
    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe", "countryOfResidence": "DE"},
}


def limits(**changes: Any) -> dict[str, Any]:
    return {"spendingLimits": {**LIMITS, **changes}}


def only(*accounts: str) -> dict[str, Any]:
    return {"accountRestrictions": {"allowedAccountIds": list(accounts)}}


def rules(*account_rules: dict[str, Any]) -> dict[str, Any]:
    return {"accountRestrictions": {"accountRules": list(account_rules)}}


# (name, policy changes, amounts transferred out before (threshold 5_000: above it they wait), the request
# (its amount, and `from`: the EUR account when "OTHER"), the decision, its rule)
CASES: list[tuple[str, dict[str, Any], list[int], dict[str, Any], str, str | None]] = [
    ("allowed", {}, [], {"amount": 2_000}, "ALLOW", None),
    ("over the approval threshold", {}, [], {"amount": 6_000}, "NEEDS_APPROVAL", "approvalThresholds.amount"),
    ("per-transaction limit", {}, [], {"amount": 12_000}, "DENY", "spendingLimits.perTransactionLimit"),
    ("the whole balance", {}, [], {"amount": None}, "DENY", "spendingLimits.perTransactionLimit"),
    ("no CREATE_TRANSFERS", {"permissions": ["CREATE_QUOTES"]}, [], {"amount": 1_000}, "DENY", "permissions"),
    (
        "an account rule's limit",
        rules({"accountId": "SELF", "perTransactionLimit": 500}),
        [],
        {"amount": 1_000},
        "DENY",
        "accountRestrictions.accountRules.perTransactionLimit",
    ),
    (
        "another account's rule's limit does not apply",
        rules({"accountId": "OTHER", "perTransactionLimit": 500}),
        [],
        {"amount": 1_000},
        "ALLOW",
        None,
    ),
    (
        "an account rule's execution mode",
        rules({"accountId": "SELF", "executionMode": "APPROVAL_REQUIRED"}),
        [],
        {"amount": 1_000},
        "NEEDS_APPROVAL",
        "accountRestrictions.accountRules.executionMode",
    ),
    (
        "another account's execution mode does not apply",
        rules({"accountId": "SELF", "executionMode": "APPROVAL_REQUIRED"}),
        [],
        {"amount": 1_000, "from": "OTHER"},
        "ALLOW",
        None,
    ),
    (
        "an account's AUTO over a default APPROVAL_REQUIRED",
        {
            "defaultExecutionMode": "APPROVAL_REQUIRED",
            **rules({"accountId": "SELF", "executionMode": "AUTO"}),
        },
        [],
        {"amount": 1_000},
        "ALLOW",
        None,
    ),
    (
        "the default APPROVAL_REQUIRED on an account without a rule",
        {
            "defaultExecutionMode": "APPROVAL_REQUIRED",
            **rules({"accountId": "SELF", "executionMode": "AUTO"}),
        },
        [],
        {"amount": 1_000, "from": "OTHER"},
        "NEEDS_APPROVAL",
        "defaultExecutionMode",
    ),
    (
        "an account's AUTO keeps the approval threshold",
        rules({"accountId": "SELF", "executionMode": "AUTO"}),
        [],
        {"amount": 6_000},
        "NEEDS_APPROVAL",
        "approvalThresholds.amount",
    ),
    ("an allowed account", only("SELF"), [], {"amount": 1_000}, "ALLOW", None),
    (
        "an account not allowed",
        only("SELF"),
        [],
        {"amount": 1_000, "from": "OTHER"},
        "DENY",
        "accountRestrictions.allowedAccountIds",
    ),
    (
        "the other account not allowed",
        only("OTHER"),
        [],
        {"amount": 1_000},
        "DENY",
        "accountRestrictions.allowedAccountIds",
    ),
    (
        "both accounts allowed, in EUR",
        only("SELF", "OTHER"),
        [],
        {"amount": 1_000, "from": "OTHER"},
        "ALLOW",
        None,
    ),
    (
        "allowed, then the account's rule",
        {
            "accountRestrictions": {
                "allowedAccountIds": ["SELF", "OTHER"],
                "accountRules": [{"accountId": "OTHER", "executionMode": "APPROVAL_REQUIRED"}],
            }
        },
        [],
        {"amount": 1_000, "from": "OTHER"},
        "NEEDS_APPROVAL",
        "accountRestrictions.accountRules.executionMode",
    ),
    (
        "an account not allowed is denied before its rule",
        {
            "accountRestrictions": {
                "allowedAccountIds": ["SELF"],
                "accountRules": [{"accountId": "OTHER", "executionMode": "AUTO"}],
            }
        },
        [],
        {"amount": 1_000, "from": "OTHER"},
        "DENY",
        "accountRestrictions.allowedAccountIds",
    ),
    (
        "an EUR account's limit in EUR, the policy's in USD",
        rules({"accountId": "OTHER", "perTransactionLimit": 900}),
        [],
        {"amount": 1_000, "from": "OTHER"},
        "DENY",
        "accountRestrictions.accountRules.perTransactionLimit",
    ),
    (
        "an EUR transfer against the USD daily limit, partly used",
        limits(dailyLimit=3_000),
        [2_000],
        {"amount": 1_000, "from": "OTHER"},
        "DENY",
        "spendingLimits.dailyLimit",
    ),
    (
        "default APPROVAL_REQUIRED",
        {"defaultExecutionMode": "APPROVAL_REQUIRED"},
        [],
        {"amount": 1_000},
        "NEEDS_APPROVAL",
        "defaultExecutionMode",
    ),
    (
        "daily limit, partly pending",
        limits(dailyLimit=10_000),
        [6_000],
        {"amount": 5_000},
        "DENY",
        "spendingLimits.dailyLimit",
    ),
    ("daily limit, room left", limits(dailyLimit=10_000), [6_000], {"amount": 4_000}, "ALLOW", None),
    (
        "daily count",
        limits(dailyTransactionLimit=1),
        [1_000],
        {"amount": 1_000},
        "DENY",
        "spendingLimits.dailyTransactionLimit",
    ),
    (
        "monthly limit",
        limits(monthlyLimit=3_000),
        [2_000],
        {"amount": 2_000},
        "DENY",
        "spendingLimits.monthlyLimit",
    ),
    ("no threshold", {"approvalThresholds": None}, [], {"amount": 9_000}, "ALLOW", None),
    (
        "policy in EUR",
        limits(currency="EUR", perTransactionLimit=1_000),
        [],
        {"amount": 2_000},
        "DENY",
        "spendingLimits.perTransactionLimit",
    ),
]


@pytest.fixture
async def platform(db, settings):
    """The platform of this module: USD and EUR, so each customer has two internal accounts."""
    return await create_platform(db, settings, currencies=["USD", "EUR"])


@pytest.fixture
async def world(client, auth):
    world = await funded_customer(client, auth, 100_000, nationality="US")  # EUR's provider asks for it
    euros = await internal_account(client, auth, world["customer"]["id"], "EUR")
    await fund(client, auth, euros["id"], 100_000)
    response = await client.post(
        "/customers/external-accounts",
        auth=auth,
        json={"customerId": world["customer"]["id"], "currency": "EUR", "accountInfo": EUR_BANK},
    )
    assert response.status_code == 201, response.text
    accounts = await client.get(
        "/customers/internal-accounts", auth=auth, params={"customerId": world["customer"]["id"]}
    )
    assert {a["id"] for a in accounts.json()["data"]} == {world["account"]["id"], euros["id"]}
    return {**world, "euro_account": euros, "euro_bank": response.json()}


def _accounts_named(value: Any, world: dict[str, Any]) -> Any:
    """`value` with "SELF" as the USD account's id and "OTHER" as the EUR account's."""
    names = {"SELF": world["account"]["id"], "OTHER": world["euro_account"]["id"]}
    if isinstance(value, dict):
        return {key: _accounts_named(item, world) for key, item in value.items()}
    if isinstance(value, list):
        return [_accounts_named(item, world) for item in value]
    return names.get(value, value) if isinstance(value, str) else value


async def _agent(client, auth, world, changes: dict[str, Any]) -> dict[str, Any]:
    return await connect(client, auth, world["customer"]["id"], **_accounts_named(changes, world))


async def _dry_run(client, agent, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/agents/me/policy/evaluate", headers=agent["headers"], json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _transfer_body(
    world, amount: int | None, kind: str = "TRANSFER_OUT", account: str = "SELF"
) -> dict[str, Any]:
    source, destination = world["account"]["id"], world["bank"]["id"]
    if account == "OTHER":
        source, destination = world["euro_account"]["id"], world["euro_bank"]["id"]
    if kind == "TRANSFER_IN":
        source, destination = destination, source
    body: dict[str, Any] = {
        "type": kind,
        "source": {"accountId": source},
        "destination": {"accountId": destination},
    }
    if amount is not None:
        body["amount"] = amount
    return body


@pytest.mark.parametrize(
    ("name", "changes", "before", "request_", "decision", "rule"), CASES, ids=[c[0] for c in CASES]
)
async def test_the_dry_run_agrees_with_the_real_transfer(client, auth, world, name, changes, before, request_,
                                                          decision, rule):  # fmt: skip
    agent = await _agent(client, auth, world, changes)
    for amount in before:
        done = await transfer_out(
            client, agent["headers"], world["account"]["id"], world["bank"]["id"], amount
        )
        assert done.status_code == 201, done.text
    me_before = (await client.get("/agents/me", headers=agent["headers"])).json()
    request_body = _transfer_body(world, request_["amount"], account=request_.get("from", "SELF"))
    source = request_body["source"]["accountId"]
    balance_before = await balance(client, auth, source)

    dry = await _dry_run(client, agent, request_body)
    assert (dry["decision"], dry["rule"]) == (decision, rule), dry
    assert set(dry["remaining"]) == {"perTransaction", "daily", "dailyCount", "monthly"}
    assert dry["evaluatedAt"]
    if request_.get("from") == "OTHER" and decision != "DENY":
        assert dry["rate"], dry  # EUR judged against the USD limits at the mid rate
    # Nothing changed.
    assert (await client.get("/agents/me", headers=agent["headers"])).json()["usage"] == me_before["usage"]
    assert await balance(client, auth, source) == balance_before

    body = {k: v for k, v in request_body.items() if k != "type"}
    real = await client.post("/agents/me/transfer-out", headers=agent["headers"], json=body)
    if decision == "DENY":
        assert real.status_code == 403, real.text
        details = real.json()["details"]
        assert {k: details.get(k) for k in ("decision", "rule", "reason", "remaining")} == {
            k: dry[k] for k in ("decision", "rule", "reason", "remaining")
        }
        assert details.get("rate") == dry["rate"]
    else:
        assert real.status_code == 201, real.text
        expected = "APPROVED" if decision == "ALLOW" else "PENDING_APPROVAL"
        assert real.json()["status"] == expected
        shown = real.json()["policyDecision"]  # the action carries the decision the dry-run explained
        assert (shown["decision"], shown.get("rule"), shown["reason"]) == (
            dry["decision"],
            dry["rule"],
            dry["reason"],
        )
        assert {k: v for k, v in dry["remaining"].items() if v is not None} == {
            k: v for k, v in shown["remaining"].items() if v is not None
        }
        assert shown.get("rate") == dry["rate"]


async def test_a_paused_agent_is_denied_by_both(client, auth, world):
    agent = await _agent(client, auth, world, {})
    paused = await client.patch(f"/agents/{agent['agent']['id']}", auth=auth, json={"isPaused": True})
    assert paused.status_code == 200, paused.text
    dry = await _dry_run(client, agent, _transfer_body(world, 1_000))
    assert (dry["decision"], dry["rule"]) == ("DENY", "isPaused")
    real = await transfer_out(client, agent["headers"], world["account"]["id"], world["bank"]["id"], 1_000)
    assert real.status_code == 403 and real.json()["details"]["rule"] == "isPaused", real.text


@pytest.mark.parametrize(
    ("changes", "decision", "rule", "status"),
    [
        ({}, "NEEDS_APPROVAL", "approvalThresholds.amount", 201),
        (only("SELF"), "NEEDS_APPROVAL", "approvalThresholds.amount", 201),
        (only("OTHER"), "DENY", "accountRestrictions.allowedAccountIds", 403),
        (rules({"accountId": "SELF", "executionMode": "APPROVAL_REQUIRED"}), "NEEDS_APPROVAL",
         "accountRestrictions.accountRules.executionMode", 201),
        (rules({"accountId": "SELF", "perTransactionLimit": 5_000}), "DENY",
         "accountRestrictions.accountRules.perTransactionLimit", 403),
    ],
    ids=["threshold", "into an allowed account", "into an account not allowed", "the account's mode",
         "the account's limit"],
)  # fmt: skip
async def test_transfer_in_agrees(client, auth, world, changes, decision, rule, status):
    """Into the USD account (an EUR_ACCOUNT bank account cannot be pulled from)."""
    agent = await _agent(client, auth, world, changes)
    request_body = _transfer_body(world, 6_000, "TRANSFER_IN")
    dry = await _dry_run(client, agent, request_body)
    assert (dry["decision"], dry["rule"]) == (decision, rule), dry
    body = {k: v for k, v in request_body.items() if k != "type"}
    real = await client.post("/agents/me/transfer-in", headers=agent["headers"], json=body)
    assert real.status_code == status, real.text
    shown = real.json()["details"] if status == 403 else real.json()["policyDecision"]
    assert {k: shown.get(k) for k in ("decision", "rule", "reason", "remaining", "rate")} == {
        k: dry[k] for k in ("decision", "rule", "reason", "remaining", "rate")
    }


async def test_executing_a_quote_agrees_as_the_accounts_allowed_change(client, auth, world):
    """A quote from the EUR account to the USD bank account: executing it is judged on the EUR account, under
    the policy of the moment (the platform changes it between the quote and its execution)."""
    agent = await _agent(client, auth, world, only("SELF", "OTHER"))
    created = await client.post(
        "/agents/me/quotes",
        headers=agent["headers"],
        json={
            "source": account_source(world["euro_account"]["id"]),
            "destination": account_destination(world["bank"]["id"]),
            "lockedCurrencySide": "SENDING",
            "lockedCurrencyAmount": 1_000,
        },
    )
    assert created.status_code == 201, created.text
    quote_id = created.json()["id"]
    agent_id = agent["agent"]["id"]

    async def judged_like_the_real_call(changes: dict[str, Any], decision: str, rule: str | None) -> Any:
        patched = await client.patch(
            f"/agents/{agent_id}/policy", auth=auth, json=_accounts_named(changes, world)
        )
        assert patched.status_code == 200, patched.text
        dry = await _dry_run(client, agent, {"type": "EXECUTE_QUOTE", "quoteId": quote_id})
        assert (dry["decision"], dry["rule"]) == (decision, rule), dry
        if decision != "DENY":
            return dry
        real = await client.post(f"/agents/me/quotes/{quote_id}/execute", headers=agent["headers"])
        assert real.status_code == 403, real.text
        details = real.json()["details"]
        assert {k: details.get(k) for k in ("decision", "rule", "reason", "remaining", "rate")} == {
            k: dry[k] for k in ("decision", "rule", "reason", "remaining", "rate")
        }
        return dry

    await judged_like_the_real_call(only("SELF"), "DENY", "accountRestrictions.allowedAccountIds")
    await judged_like_the_real_call(
        {"accountRestrictions": {"allowedAccountIds": ["SELF", "OTHER"],
                                 "accountRules": [{"accountId": "OTHER", "perTransactionLimit": 999}]}},
        "DENY",
        "accountRestrictions.accountRules.perTransactionLimit",
    )  # fmt: skip
    dry = await judged_like_the_real_call(
        {"accountRestrictions": {"allowedAccountIds": ["SELF", "OTHER"],
                                 "accountRules": [{"accountId": "OTHER", "executionMode": "APPROVAL_REQUIRED"}]}},
        "NEEDS_APPROVAL",
        "accountRestrictions.accountRules.executionMode",
    )  # fmt: skip
    assert dry["rate"]  # EUR judged against the USD limits
    real = await client.post(f"/agents/me/quotes/{quote_id}/execute", headers=agent["headers"])
    assert real.status_code == 200, real.text
    assert real.json()["status"] == "PENDING_APPROVAL"
    shown = real.json()["policyDecision"]
    assert {k: shown.get(k) for k in ("decision", "rule", "reason", "remaining", "rate")} == {
        k: dry[k] for k in ("decision", "rule", "reason", "remaining", "rate")
    }


async def test_another_customers_account_is_404_for_both(client, auth, world):
    agent = await _agent(client, auth, world, {})
    other = await funded_customer(client, auth, 1_000)
    body = _transfer_body(world, 1_000)
    body["source"] = {"accountId": other["account"]["id"]}
    dry = await client.post("/agents/me/policy/evaluate", headers=agent["headers"], json=body)
    real = await client.post(
        "/agents/me/transfer-out",
        headers=agent["headers"],
        json={k: v for k, v in body.items() if k != "type"},
    )
    assert dry.status_code == real.status_code == 404, (dry.text, real.text)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "TRANSFER_OUT", "amount": 1}, "source"),
        ({"type": "EXECUTE_QUOTE"}, "quoteId"),
        ({"type": "EXECUTE_QUOTE", "quoteId": "Quote:x", "amount": 5}, "amount"),
        ({"type": "SPEND_IT_ALL"}, "type"),
    ],
)
async def test_a_malformed_dry_run_is_a_400_naming_the_field(client, auth, world, body, field):
    agent = await _agent(client, auth, world, {})
    response = await client.post("/agents/me/policy/evaluate", headers=agent["headers"], json=body)
    assert response.status_code == 400, response.text
    assert field in response.text


async def test_platform_credentials_cannot_dry_run(client, auth, world):
    response = await client.post("/agents/me/policy/evaluate", auth=auth, json=_transfer_body(world, 1_000))
    assert response.status_code in (401, 403), response.text


async def test_concurrent_dry_runs_and_transfers_near_a_limit_agree(client, auth, world, backend):
    """20 transfers and 20 dry-runs at once (PostgreSQL: really concurrent): every dry-run saw a state the
    transfers passed through (its headroom is the limit minus a whole number of executed transfers) and
    decided by it; exactly the limit executed; a dry-run afterwards says DENY with nothing left."""
    if backend != "postgresql":
        pytest.skip("real concurrency needs PostgreSQL (SQLite serializes every write)")
    agent = await _agent(client, auth, world, {"approvalThresholds": None, **limits(dailyLimit=10_000)})
    body = _transfer_body(world, 1_000)
    transfers = [
        transfer_out(
            client, agent["headers"], world["account"]["id"], world["bank"]["id"], 1_000, key=f"k{n}"
        )
        for n in range(20)
    ]
    dry_runs = [
        client.post("/agents/me/policy/evaluate", headers=agent["headers"], json=body) for _ in range(20)
    ]
    answers = await asyncio.gather(*(x for pair in zip(transfers, dry_runs, strict=True) for x in pair))
    real, dry = answers[0::2], answers[1::2]
    assert sum(r.status_code == 201 for r in real) == 10, [r.text for r in real]
    assert all(r.status_code in (201, 403) for r in real)
    for response in dry:
        assert response.status_code == 200, response.text
        seen = response.json()
        left = seen["remaining"]["daily"]
        assert left in range(0, 10_001, 1_000), seen
        assert seen["decision"] == ("ALLOW" if left >= 1_000 else "DENY"), seen
    after = await _dry_run(client, agent, body)
    assert (after["decision"], after["rule"], after["remaining"]["daily"]) == (
        "DENY",
        "spendingLimits.dailyLimit",
        0,
    )
