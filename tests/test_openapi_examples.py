"""Every request body in /openapi.json has an example, and every example works as written: each is sent
with the ids it names (kit/openapi.py ExampleIds) replaced by real ones from a fresh sandbox, and is
answered 2xx. Data-driven: an operation added later is sent the moment it is served; one whose path
names something this sandbox cannot provide yet fails with the name of what to add to PATH_PARAMETERS."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from platpay import BASE_PATH
from platpay.kit.openapi import ExampleIds
from tests.factories import (
    account_destination,
    create_platform,
    customer,
    external_account,
    fund,
    internal_account,
    mxn_account,
    quote,
)

# Sent last: it may change what the others need (an endpoint awaiting replies, the supported currencies).
LAST = ("updatePlatformConfig",)
# The agent whose token sends the agent operations' examples (operationIds starting with "agent").
AGENT_POLICY: dict[str, Any] = {
    "permissions": ["CREATE_TRANSFERS", "CREATE_QUOTES", "EXECUTE_QUOTES", "MANAGE_EXTERNAL_ACCOUNTS"],
    "defaultExecutionMode": "AUTO",
    "spendingLimits": {"currency": "USD", "perTransactionLimit": 1_000_000, "dailyLimit": 10_000_000},
    "approvalThresholds": {"currency": "USD", "amount": 100_000},
}
BUSINESS = {
    "customerType": "BUSINESS",
    "address": {"line1": "500 Market St", "postalCode": "94105", "country": "US"},
    "businessInfo": {"legalName": "Beta LLC", "taxId": "12-3456789", "incorporatedOn": "2015-06-01"},
}


@dataclass
class Sandbox:
    """A fresh sandbox platform ("Acme", UMA domain acme.platpay.test) holding what the examples name."""

    client: httpx.AsyncClient
    auth: tuple[str, str]
    ids: dict[str, str] = field(default_factory=dict)

    @classmethod
    async def build(cls, client: httpx.AsyncClient, auth: tuple[str, str]) -> Sandbox:
        sandbox = cls(client, auth)
        person = await customer(client, auth, currencies=["USD", "MXN", "USDC"])
        usd = await internal_account(client, auth, person["id"], "USD")
        await fund(client, auth, usd["id"], 1_000_000)
        mxn = await mxn_account(client, auth, person["id"])
        funded_quote = await quote(
            client,
            auth,
            source={"sourceType": "REALTIME_FUNDING", "customerId": person["id"], "currency": "USD"},
            destination=account_destination(mxn["id"]),
        )
        assert funded_quote.status_code == 201, funded_quote.text
        sandbox.ids = {
            ExampleIds.CUSTOMER: person["id"],
            ExampleIds.INTERNAL_ACCOUNT: usd["id"],
            ExampleIds.CRYPTO_INTERNAL_ACCOUNT: (await internal_account(client, auth, person["id"], "USDC"))[
                "id"
            ],
            ExampleIds.EXTERNAL_ACCOUNT: (await external_account(client, auth, person["id"]))["id"],
            ExampleIds.MXN_EXTERNAL_ACCOUNT: mxn["id"],
            ExampleIds.QUOTE: funded_quote.json()["id"],
        }
        return sandbox

    def substitute(self, value: Any) -> Any:
        text = json.dumps(value)
        for example_id, real_id in self.ids.items():
            text = text.replace(example_id, real_id)
        return json.loads(text)

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.client.post(path, auth=self.auth, json=body)
        assert response.status_code in (200, 201), response.text
        return response.json()

    async def pending_incoming_payment(self, _example: Any) -> dict[str, str]:
        """A payment awaiting the platform's decision (no webhook endpoint: it decides through the API)."""
        payment = await self.post(
            "/sandbox/uma/receive",
            {
                "senderUmaAddress": "$success.usd@sandbox.uma.money",
                "customerId": self.ids[ExampleIds.CUSTOMER],
                "receivingCurrencyCode": "USD",
                "receivingCurrencyAmount": 1000,
            },
        )
        return {"transactionId": payment["id"]}

    async def agent(self) -> dict[str, Any]:
        """A connected agent of the sandbox's customer: its id and the headers carrying its token."""
        created = await self.post(
            "/agents",
            {"name": "Examples", "customerId": self.ids[ExampleIds.CUSTOMER], "policy": AGENT_POLICY},
        )
        redeemed = await self.client.post(f"/agents/device-codes/{created['deviceCode']['code']}/redeem")
        assert redeemed.status_code == 200, redeemed.text
        token = redeemed.json()["accessToken"]
        return {"agentId": created["agent"]["id"], "headers": {"Authorization": f"Bearer {token}"}}

    async def fresh_agent(self, _example: Any) -> dict[str, str]:
        return {"agentId": (await self.agent())["agentId"]}

    async def pending_agent_action(self, _example: Any) -> dict[str, str]:
        """An agent transfer above its approval threshold, waiting for the platform."""
        agent = await self.agent()
        body = {
            "source": {"accountId": self.ids[ExampleIds.INTERNAL_ACCOUNT]},
            "destination": {"accountId": self.ids[ExampleIds.EXTERNAL_ACCOUNT]},
            "amount": AGENT_POLICY["approvalThresholds"]["amount"] + 1,
        }
        response = await self.client.post("/agents/me/transfer-out", headers=agent["headers"], json=body)
        assert response.status_code == 201 and response.json()["status"] == "PENDING_APPROVAL", response.text
        return {"agentId": agent["agentId"], "actionId": response.json()["id"]}

    async def customer_of_the_examples_type(self, example: Any) -> dict[str, str]:
        if example.get("customerType") == "BUSINESS":
            return {"customerId": (await self.post("/customers", BUSINESS))["id"]}
        return {"customerId": self.ids[ExampleIds.CUSTOMER]}


# What fills a path's parameters, by operationId (else by parameter name, from the sandbox's ids).
PATH_PARAMETERS: dict[str, Callable[[Sandbox, Any], Awaitable[dict[str, str]]]] = {
    "approvePendingPayment": Sandbox.pending_incoming_payment,
    "rejectPendingPayment": Sandbox.pending_incoming_payment,
    "confirmReceiptDelivery": Sandbox.pending_incoming_payment,
    "updateCustomerById": Sandbox.customer_of_the_examples_type,
    "updateAgent": Sandbox.fresh_agent,
    "updateAgentPolicy": Sandbox.fresh_agent,
    "rejectAgentAction": Sandbox.pending_agent_action,
}
BY_NAME = {"customerId": ExampleIds.CUSTOMER, "accountId": ExampleIds.INTERNAL_ACCOUNT}


async def _path(sandbox: Sandbox, operation_id: str, path: str, example: Any) -> str:
    params = {name: sandbox.ids[example_id] for name, example_id in BY_NAME.items()}
    provider = PATH_PARAMETERS.get(operation_id)
    if provider is not None:
        params.update(await provider(sandbox, example))
    return path.removeprefix(BASE_PATH).format(**params)


def _bodies(document: dict[str, Any]) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """(operationId, method, path, media type, media) of every request body, the LAST ones last."""
    found = [
        (operation["operationId"], method, path, media_type, media)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        for media_type, media in operation.get("requestBody", {}).get("content", {}).items()
    ]
    return sorted(found, key=lambda entry: entry[0] in LAST)


async def test_every_request_body_has_an_example_that_is_answered_2xx(client, db, settings) -> None:
    created = await create_platform(
        db, settings, name="Acme", currencies=["USD", "MXN", "USDC", "BTC", "EUR"]
    )
    sandbox = await Sandbox.build(client, created["sandbox"])
    document = (await client.get("http://testserver/openapi.json")).json()
    bodies = _bodies(document)
    assert len(bodies) >= 18
    failures = []
    agent: dict[str, Any] | None = None
    for operation_id, method, path, media_type, media in bodies:
        examples = media.get("examples", {})
        if not examples:
            failures.append(
                f"{operation_id}: its {media_type} body has no example (kit/openapi.request_examples)"
            )
        for name, example in examples.items():
            value = sandbox.substitute(example["value"])
            try:
                url = await _path(sandbox, operation_id, path, value)
            except KeyError as missing:
                failures.append(f"{operation_id}: add a provider of {missing} to PATH_PARAMETERS")
                continue
            if media_type == "multipart/form-data":
                files = {key: (f"{key}.csv", text.encode(), "text/csv") for key, text in value.items()}
                response = await client.request(method.upper(), url, auth=sandbox.auth, files=files)
            elif operation_id.startswith("agent"):
                agent = agent or await sandbox.agent()
                response = await client.request(method.upper(), url, headers=agent["headers"], json=value)
            else:
                response = await client.request(method.upper(), url, auth=sandbox.auth, json=value)
            if not 200 <= response.status_code < 300:
                failures.append(
                    f"{operation_id} example {name!r}: {response.status_code} {response.text[:400]}"
                )
    assert not failures, "\n".join(failures)
