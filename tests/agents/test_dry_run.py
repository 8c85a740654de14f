"""POST /agents/me/policy/evaluate agrees with the real operation on every case of the table: the dry-run is
asked first, then the same request is made for real, and the decision (with its rule, reason and remaining
headroom where the real call shows them) is the same. The dry-run itself changes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.agents.support import balance, connect, funded_customer, policy, transfer_out

LIMITS = policy()["spendingLimits"]


def limits(**changes: Any) -> dict[str, Any]:
    return {"spendingLimits": {**LIMITS, **changes}}


# (name, policy changes, amounts transferred out before (threshold 5_000: above it they wait), the request)
CASES: list[tuple[str, dict[str, Any], list[int], dict[str, Any], str, str | None]] = [
    ("allowed", {}, [], {"amount": 2_000}, "ALLOW", None),
    ("over the approval threshold", {}, [], {"amount": 6_000}, "NEEDS_APPROVAL", "approvalThresholds.amount"),
    ("per-transaction limit", {}, [], {"amount": 12_000}, "DENY", "spendingLimits.perTransactionLimit"),
    ("the whole balance", {}, [], {"amount": None}, "DENY", "spendingLimits.perTransactionLimit"),
    ("no CREATE_TRANSFERS", {"permissions": ["CREATE_QUOTES"]}, [], {"amount": 1_000}, "DENY", "permissions"),
    (
        "an account rule's limit",
        {"accountRestrictions": {"accountRules": [{"accountId": "SELF", "perTransactionLimit": 500}]}},
        [],
        {"amount": 1_000},
        "DENY",
        "accountRestrictions.accountRules.perTransactionLimit",
    ),
    (
        "an account rule's execution mode",
        {
            "accountRestrictions": {
                "accountRules": [{"accountId": "SELF", "executionMode": "APPROVAL_REQUIRED"}]
            }
        },
        [],
        {"amount": 1_000},
        "NEEDS_APPROVAL",
        "accountRestrictions.accountRules.executionMode",
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
async def world(client, auth):
    return await funded_customer(client, auth, 100_000)


async def _agent(client, auth, world, changes: dict[str, Any]) -> dict[str, Any]:
    restrictions = changes.get("accountRestrictions")
    if restrictions:  # "SELF": the customer's internal account
        rules = [{**rule, "accountId": world["account"]["id"]} for rule in restrictions["accountRules"]]
        changes = {**changes, "accountRestrictions": {"accountRules": rules}}
    return await connect(client, auth, world["customer"]["id"], **changes)


async def _dry_run(client, agent, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/agents/me/policy/evaluate", headers=agent["headers"], json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _transfer_body(world, amount: int | None, kind: str = "TRANSFER_OUT") -> dict[str, Any]:
    source, destination = world["account"]["id"], world["bank"]["id"]
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
    balance_before = await balance(client, auth, world["account"]["id"])

    dry = await _dry_run(client, agent, _transfer_body(world, request_["amount"]))
    assert (dry["decision"], dry["rule"]) == (decision, rule), dry
    assert set(dry["remaining"]) == {"perTransaction", "daily", "dailyCount", "monthly"}
    assert dry["evaluatedAt"]
    # Nothing changed.
    assert (await client.get("/agents/me", headers=agent["headers"])).json()["usage"] == me_before["usage"]
    assert await balance(client, auth, world["account"]["id"]) == balance_before

    body = {k: v for k, v in _transfer_body(world, request_["amount"]).items() if k != "type"}
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


async def test_a_paused_agent_is_denied_by_both(client, auth, world):
    agent = await _agent(client, auth, world, {})
    paused = await client.patch(f"/agents/{agent['agent']['id']}", auth=auth, json={"isPaused": True})
    assert paused.status_code == 200, paused.text
    dry = await _dry_run(client, agent, _transfer_body(world, 1_000))
    assert (dry["decision"], dry["rule"]) == ("DENY", "isPaused")
    real = await transfer_out(client, agent["headers"], world["account"]["id"], world["bank"]["id"], 1_000)
    assert real.status_code == 403 and real.json()["details"]["rule"] == "isPaused", real.text


async def test_transfer_in_agrees(client, auth, world):
    agent = await _agent(client, auth, world, {})
    dry = await _dry_run(client, agent, _transfer_body(world, 6_000, "TRANSFER_IN"))
    body = {k: v for k, v in _transfer_body(world, 6_000, "TRANSFER_IN").items() if k != "type"}
    real = await client.post("/agents/me/transfer-in", headers=agent["headers"], json=body)
    assert real.status_code == 201, real.text
    assert (dry["decision"], real.json()["status"]) == ("NEEDS_APPROVAL", "PENDING_APPROVAL")


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
