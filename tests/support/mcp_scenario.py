"""Every `platpay mcp` tool on its success path with real data, through any transport, and each result
checked against the outputSchema its tool advertises with an independent JSON Schema validator (the
`jsonschema` package, compiled once per tool; never the MCP SDK's own validation).

`call(name, arguments)` answers the result as it travels on the wire (a JSON object: `content`,
`structuredContent`, `isError`, `_meta`); `tools` is the `tools/list` answer's `tools` in wire form. The
agent must hold every permission (tests/support/agents.py's default policy: approval above 5,000 cents),
its customer an internal USD account funded with at least 100,000 cents and a USD bank account.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.validators import validator_for

from platpay.mcp.tools import SPECS
from tests.factories import PERSON, account_destination, account_source, clabe_ending

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

# Ajv with ajv-formats (the MCP TypeScript SDK's validator) checks formats: so do we.
FORMATS = FormatChecker()


def validators(tools: list[dict[str, Any]]) -> dict[str, Draft202012Validator]:
    """One compiled validator per listed tool's outputSchema; every listed tool must have one, rooted at
    `type: object` as MCP requires."""
    compiled = {}
    for tool in tools:
        schema = tool.get("outputSchema")
        assert schema is not None, f"{tool['name']} advertises no outputSchema"
        assert schema.get("type") == "object", (tool["name"], schema.get("type"))
        cls = validator_for(schema)
        cls.check_schema(schema)
        compiled[tool["name"]] = cls(schema, format_checker=FORMATS)
    return compiled


def check(validator: Draft202012Validator, name: str, result: dict[str, Any]) -> None:
    assert not result.get("isError"), (name, result)
    content = result.get("structuredContent")
    assert isinstance(content, dict), (name, result)
    errors = sorted(validator.iter_errors(content), key=lambda error: list(error.absolute_path))
    assert not errors, f"{name}: " + "; ".join(
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in errors[:5]
    )


async def exercise(
    call: Call, *, account_id: str, bank_id: str, run: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """Calls every tool on its success path (several on more than one kind of answer); answers each tool's
    results by name. Asserts only what makes the next step possible: the schema checks are the caller's.
    `run` tells runs for the same agent apart (the accounts they add, their idempotency keys)."""
    results: dict[str, list[dict[str, Any]]] = defaultdict(list)

    async def ok(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await call(name, arguments)
        assert not result.get("isError"), (name, arguments, result)
        results[name].append(result)
        return result["structuredContent"]

    transfer_out = {"source": {"accountId": account_id}, "destination": {"accountId": bank_id}}

    await ok("get_me", {})
    await ok("list_internal_accounts", {})
    await ok("list_internal_accounts", {"currency": "USD", "type": "INTERNAL_FIAT", "limit": 5})
    await ok("list_external_accounts", {})

    clabe = clabe_ending(f"{11 + run:03d}")
    payee = await ok(
        "add_external_account",
        {
            "currency": "MXN",
            "accountInfo": {"accountType": "MXN_ACCOUNT", "clabeNumber": clabe, "beneficiary": PERSON},
        },
    )
    spare = await ok(
        "add_external_account",
        {
            "currency": "USD",
            "accountInfo": {
                "accountType": "USD_ACCOUNT",
                "accountNumber": f"5550001{run:02d}",
                "routingNumber": "011000015",
                "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
            },
        },
    )

    quote = await ok(
        "create_quote",
        {
            "source": account_source(account_id),
            "destination": account_destination(payee["id"]),
            "lockedCurrencySide": "SENDING",
            "lockedCurrencyAmount": 2_000,
        },
    )
    await ok("get_quote", {"quoteId": quote["id"]})
    executed = await ok("execute_quote", {"quoteId": quote["id"]})
    assert executed["status"] == "APPROVED", executed

    pulled = await ok(
        "transfer_in",
        {"source": {"accountId": bank_id}, "destination": {"accountId": account_id}, "amount": 1_500},
    )
    assert pulled["status"] == "APPROVED", pulled
    sent = await ok("transfer_out", {**transfer_out, "amount": 1_000, "description": "rent"})
    assert sent["status"] == "APPROVED" and sent["transaction"]["id"], sent
    pending = await ok(
        "transfer_out", {**transfer_out, "amount": 6_000, "idempotencyKey": f"scenario-pending-{run}"}
    )
    assert pending["status"] == "PENDING_APPROVAL", pending

    listed = await ok("list_transactions", {})
    await ok("list_transactions", {"type": "OUTGOING", "limit": 2})
    kinds = set()
    for transaction in listed["data"]:
        got = await ok("get_transaction", {"transactionId": transaction["id"]})
        assert got["id"] == transaction["id"], got
        kinds.add(got["type"])
    assert kinds == {"INCOMING", "OUTGOING"}, kinds  # both members of the union

    actions = await ok("list_actions", {})
    assert len(actions["data"]) >= 4, actions
    for action in actions["data"]:
        await ok("get_action", {"actionId": action["id"]})
    await ok("list_actions", {"status": "PENDING_APPROVAL"})
    waited = await ok("wait_for_action", {"actionId": sent["id"], "timeoutSeconds": 5})
    assert waited["status"] == "APPROVED", waited
    still = await ok("wait_for_action", {"actionId": pending["id"], "timeoutSeconds": 0})
    assert still["status"] == "PENDING_APPROVAL", still

    allowed = await ok("check_policy", {"type": "TRANSFER_OUT", **transfer_out, "amount": 100})
    assert allowed["decision"] == "ALLOW", allowed
    denied = await ok("check_policy", {"type": "TRANSFER_OUT", **transfer_out, "amount": 20_000})
    assert denied["decision"] == "DENY", denied
    held = await ok("check_policy", {"type": "TRANSFER_OUT", **transfer_out, "amount": 6_000})
    assert held["decision"] == "NEEDS_APPROVAL", held
    await ok("check_policy", {"type": "TRANSFER_IN", "source": {"accountId": bank_id},
                              "destination": {"accountId": account_id}, "amount": 100})  # fmt: skip

    removed = await ok("remove_external_account", {"externalAccountId": spare["id"]})
    assert removed == {"externalAccountId": spare["id"], "removed": True}, removed
    remaining = await ok("list_external_accounts", {})
    assert spare["id"] not in {account["id"] for account in remaining["data"]}
    return dict(results)


async def exercise_and_check(call: Call, tools: list[dict[str, Any]], **accounts: Any) -> None:
    """The whole check: every tool tools/list names (all of SPECS: the agent holds every permission) called
    on its success path, every result valid against the tool's own outputSchema. A tool added without a
    success-path step in `exercise` fails here."""
    listed = {tool["name"] for tool in tools}
    assert listed == {spec.name for spec in SPECS}, listed ^ {spec.name for spec in SPECS}
    compiled = validators(tools)
    results = await exercise(call, **accounts)
    assert set(results) == listed, f"tools without a success-path call: {sorted(listed - set(results))}"
    for name, answers in results.items():
        for result in answers:
            check(compiled[name], name, result)
