"""Every request body in /openapi.json has an example, and every example works as written: each is sent
with the ids it names (kit/openapi.py ExampleIds) replaced by real ones from a fresh sandbox, and is
answered 2xx. Data-driven: an operation added later is sent the moment it is served; one whose path
names something this sandbox cannot provide yet fails with the name of what to add to PATH_PARAMETERS.

An embedded-wallet example whose value only real cryptography makes (an OIDC token minutes old, a WebAuthn
attestation or assertion, an OTP sealed to the wallet's HPKE target) is a realistic placeholder in the
document; its PATH_PARAMETERS provider makes the real value (tests/support/wallets.py: a software
authenticator, OIDC tokens, session keys) and, where the operation is a signed retry (SPEC §4.12), the test
stamps the 202's payloadToSign with a key of the wallet and sends the retry, which must succeed too."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric import ec

from platpay import BASE_PATH
from platpay.jobs.runner import JobRunner
from platpay.kit.crypto import bundles, p256
from platpay.kit.openapi import ExampleIds
from tests.factories import (
    account_destination,
    card_ready_customer,
    create_platform,
    customer,
    external_account,
    fund,
    internal_account,
    mxn_account,
    quote,
)
from tests.support import onboarding
from tests.support.wallets import (
    Authenticator,
    Wallet,
    new_key,
    oidc_token,
    public_hex,
    signed_headers,
    wallet_account,
)

# Sent last: it may change what the others need (an endpoint awaiting replies, the supported currencies).
LAST = ("advanceSandboxClock", "updatePlatformConfig")  # the clock moved: quotes made before expire
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
OWNER_INFO = {
    "firstName": "Ada",
    "lastName": "Owner",
    "birthDate": "1980-02-03",
    "nationality": "US",
    "address": {"line1": "2 Oak St", "postalCode": "94105", "country": "US"},
    "idType": "SSN",
    "identifier": "123-45-6789",
}
OIDC_SUBJECT = "110169484474386276334"  # the OAUTH identity of the examples' wallet


@dataclass
class Prepared:
    """What an example needs beyond its ids: its path parameters, real values for the document's
    placeholders (merged into the example, whose other fields are sent as written), headers, and the key
    that stamps the signed retry when the first call answers 202."""

    params: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    signer: ec.EllipticCurvePrivateKey | None = None


EUROPEAN = {
    "customerType": "INDIVIDUAL",
    "fullName": "Marie Curie",
    "birthDate": "1990-11-07",
    "nationality": "FR",
    "address": {"line1": "1 rue de Rivoli", "postalCode": "75001", "country": "FR"},
    "currencies": ["EUR"],
}


@dataclass
class Sandbox:
    """A fresh sandbox platform ("Acme", UMA domain acme.platpay.test) holding what the examples name, and
    two embedded wallets: `wallet` (ExampleIds.EMBEDDED_WALLET) with an OAUTH credential, a session of it
    and a passkey, its bootstrap EMAIL_OTP revoked (so that one can be added back), and `otp_wallet`, a new
    wallet with only its bootstrap EMAIL_OTP."""

    client: httpx.AsyncClient
    auth: tuple[str, str]
    runner: JobRunner
    ids: dict[str, str] = field(default_factory=dict)
    wallet: Wallet | None = None
    otp_wallet: Wallet | None = None
    authenticator: Authenticator = field(default_factory=Authenticator)  # the wallet's passkey
    credential_ids: dict[str, str] = field(default_factory=dict)  # the wallet's OAUTH and PASSKEY
    session_key: ec.EllipticCurvePrivateKey | None = None  # of its OAUTH session, signing its retries
    added: int = 0

    @classmethod
    async def build(cls, client: httpx.AsyncClient, auth: tuple[str, str], runner: JobRunner) -> Sandbox:
        sandbox = cls(client, auth, runner)
        person = await card_ready_customer(client, auth, currencies=["USD", "MXN", "USDC"])  # a cardholder
        approved = await client.post(
            f"/sandbox/customers/{person['id']}/kyc", auth=auth, json={"kycStatus": "APPROVED"}
        )
        assert approved.status_code == 200, approved.text  # a cardholder
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
        invitee = await customer(client, auth, fullName="John Roe")
        sandbox.ids = {
            ExampleIds.CUSTOMER: person["id"],
            ExampleIds.CUSTOMER_UMA: person["umaAddress"],
            ExampleIds.INVITEE_UMA: invitee["umaAddress"],
            ExampleIds.INTERNAL_ACCOUNT: usd["id"],
            ExampleIds.CRYPTO_INTERNAL_ACCOUNT: (await internal_account(client, auth, person["id"], "USDC"))[
                "id"
            ],
            ExampleIds.EXTERNAL_ACCOUNT: (await external_account(client, auth, person["id"]))["id"],
            ExampleIds.MXN_EXTERNAL_ACCOUNT: mxn["id"],
            ExampleIds.QUOTE: funded_quote.json()["id"],
            ExampleIds.EMBEDDED_WALLET: (await sandbox._build_wallets()).id,
        }
        business = await sandbox.post("/customers", BUSINESS)
        owner = await sandbox.post(
            "/beneficial-owners",
            {
                "customerId": business["id"],
                "roles": ["UBO"],
                "ownershipPercentage": 40,
                "personalInfo": OWNER_INFO,
            },
        )
        sandbox.ids[ExampleIds.BUSINESS_CUSTOMER] = business["id"]
        sandbox.ids[ExampleIds.BENEFICIAL_OWNER] = owner["id"]
        return sandbox

    async def _build_wallets(self) -> Wallet:
        self.otp_wallet = Wallet(self.client, self.auth, await wallet_account(self.client, self.auth))
        wallet = self.wallet = Wallet(self.client, self.auth, await wallet_account(self.client, self.auth))
        [bootstrap] = await self._credentials("EMAIL_OTP")
        oauth = await self.post(
            "/auth/credentials",
            {"type": "OAUTH", "accountId": wallet.id, "oidcToken": oidc_token(client_public_key=None)},
        )  # the wallet's first verified credential: added at once
        self.credential_ids["OAUTH"] = oauth["id"]
        session, self.session_key = await self.oauth_session()
        wallet.keys[session["id"]] = self.session_key
        options = await self.post("/auth/credentials/passkey-challenges", {"accountId": wallet.id})
        passkey = {
            "type": "PASSKEY",
            "accountId": wallet.id,
            "nickname": "Laptop",
            "challenge": options["challenge"],
            "attestation": self.authenticator.register(options["challenge"]),
        }
        added = await wallet.signed("POST", "/auth/credentials", json_body=passkey, expect=201)
        self.credential_ids["PASSKEY"] = added.json()["id"]
        await wallet.signed("DELETE", f"/auth/credentials/{bootstrap['id']}", expect=204)
        return wallet

    def substitute(self, value: Any) -> Any:
        text = json.dumps(value)
        for example_id, real_id in self.ids.items():
            text = text.replace(example_id, real_id)
        return json.loads(text)

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.client.post(path, auth=self.auth, json=body)
        assert response.status_code in (200, 201), response.text
        return response.json()

    async def _credentials(self, kind: str, wallet: Wallet | None = None) -> list[dict[str, Any]]:
        wallet = wallet or self.wallet
        assert wallet is not None
        response = await self.client.get("/auth/credentials", auth=self.auth, params={"accountId": wallet.id})
        assert response.status_code == 200, response.text
        return [credential for credential in response.json()["data"] if credential["type"] == kind]

    async def oauth_session(self) -> tuple[dict[str, Any], ec.EllipticCurvePrivateKey]:
        """A new session of the wallet's OAUTH credential and its signing key."""
        key = new_key()
        session = await self.post(
            f"/auth/credentials/{self.credential_ids['OAUTH']}/verify",
            {
                "type": "OAUTH",
                "oidcToken": oidc_token(client_public_key=public_hex(key), sub=OIDC_SUBJECT),
                "clientPublicKey": public_hex(key),
            },
        )
        scalar = bundles.open_credential_bundle(session["encryptedSessionSigningKey"], key)
        return session, p256.private_key_from_scalar(scalar)

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

    async def unsettled_transfer(self, _example: Any) -> dict[str, str]:
        """A transfer-out the rail has not settled (no job runner runs here): cancellable."""
        transfer = await self.post(
            "/transfer-out",
            {
                "source": {"accountId": self.ids[ExampleIds.INTERNAL_ACCOUNT]},
                "destination": {"accountId": self.ids[ExampleIds.EXTERNAL_ACCOUNT], "paymentRail": "ACH"},
                "amount": 100,
            },
        )
        return {"transactionId": transfer["id"]}

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

    async def card(self, state: str = "ACTIVE") -> str:
        """A card of the examples' customer funded by its USD account, provisioned, in `state`."""
        body = {
            "cardholderId": self.ids[ExampleIds.CUSTOMER],
            "platformCardId": "example-card-100",
            "form": "VIRTUAL",
            "fundingSources": [self.ids[ExampleIds.INTERNAL_ACCOUNT]],
        }
        card = await self.post("/cards", body)
        await self.runner.run_until_idle()
        if state != "ACTIVE":
            changed = await self.client.patch(f"/cards/{card['id']}", auth=self.auth, json={"state": state})
            assert changed.status_code == 200, changed.text
        return card["id"]

    async def card_to_change(self, example: Any) -> dict[str, str]:
        """A card the example's move applies to (unfreezing needs a frozen one)."""
        return {"id": await self.card("FROZEN" if example.get("state") == "ACTIVE" else "ACTIVE")}

    async def active_card(self, _example: Any) -> dict[str, str]:
        return {"id": await self.card()}

    async def simulate(self, card_id: str, what: str, body: dict[str, Any]) -> str:
        """A card simulation (202), applied by the job runner: the token of its card transaction."""
        response = await self.client.post(
            f"/sandbox/cards/{card_id}/simulate/{what}", auth=self.auth, json=body
        )
        assert response.status_code == 202, response.text
        await self.runner.run_until_idle()
        return response.json()["issuerTransactionToken"]

    async def card_transaction(
        self, example: Any, *, settled: bool = False, returned: bool = False
    ) -> dict[str, str]:
        """A card with an authorization (settled, for a return; and returned, for a return reversal) that the
        example's body is sent against: its cardTransactionId is set in the body."""
        card_id = await self.card()
        token = await self.simulate(
            card_id,
            "authorization",
            {"amount": 1_000, "currency": {"code": "USD"}, "merchant": {"descriptor": "EXAMPLE SHOP"}},
        )
        listed = await self.client.get(f"/cards/{card_id}/transactions", auth=self.auth)
        [transaction_id] = [t["id"] for t in listed.json()["data"] if t["issuerTransactionToken"] == token]
        if settled or returned:
            await self.simulate(card_id, "clearing", {"cardTransactionId": transaction_id, "amount": 1_000})
        if returned:
            await self.simulate(card_id, "return", {"cardTransactionId": transaction_id, "amount": 1_000})
        example["cardTransactionId"] = transaction_id
        return {"id": card_id}

    async def settled_card_transaction(self, example: Any) -> dict[str, str]:
        return await self.card_transaction(example, settled=True)

    async def returned_card_transaction(self, example: Any) -> dict[str, str]:
        return await self.card_transaction(example, returned=True)

    async def document(self, _example: Any) -> dict[str, str]:
        """A passport of the individual customer, to replace."""
        response = await self.client.post(
            "/documents",
            auth=self.auth,
            data={
                "documentHolder": self.ids[ExampleIds.CUSTOMER],
                "documentType": "PASSPORT",
                "country": "US",
            },
            files={"file": ("passport.pdf", b"%PDF-1.4\n%%EOF\n", "application/pdf")},
        )
        assert response.status_code == 201, response.text
        return {"documentId": response.json()["id"]}

    async def pending_invitation(self, _example: Any) -> dict[str, str]:
        """An invitation from the sandbox's first customer, waiting to be claimed."""
        invitation = await self.post("/invitations", {"inviterUma": self.ids[ExampleIds.CUSTOMER_UMA]})
        return {"invitationCode": invitation["invitationCode"]}

    async def customer_needing_contact_verification(self, _example: Any) -> dict[str, str]:
        """A customer in EUR, whose sandbox provider requires email and phone verification."""
        european = {**EUROPEAN, "email": "marie@example.fr"}
        return {"customerId": (await self.post("/customers", european))["id"]}

    async def verification_awaiting_review(self, _example: Any) -> dict[str, str]:
        """A verification the sandbox KYC provider left to a person (a name ending in 001)."""
        person = await onboarding.create(
            self.client, self.auth, {**onboarding.PERSON, "fullName": "Jane Doe 001", "nationality": "US"}
        )
        await onboarding.uploaded(self.client, self.auth, person["id"], "PASSPORT", onboarding.png())
        await onboarding.uploaded(self.client, self.auth, person["id"], "UTILITY_BILL")
        verification = await onboarding.verify(self.client, self.auth, person["id"])
        path = f"/verifications/{verification['id']}"

        async def waiting() -> bool:
            found = (await self.client.get(path, auth=self.auth)).json()
            return found["verificationStatus"] == "PENDING_MANUAL_REVIEW"

        for _ in range(50):
            if await waiting():
                break
            await self.runner.run_until_idle(timeout=10)
        assert await waiting(), (await self.client.get(path, auth=self.auth)).json()
        return {"verificationId": verification["id"]}

    async def customer_of_the_examples_type(self, example: Any) -> dict[str, str]:
        if example.get("customerType") == "BUSINESS":
            return {"customerId": (await self.post("/customers", BUSINESS))["id"]}
        return {"customerId": self.ids[ExampleIds.CUSTOMER]}

    # Embedded wallets

    async def credential_to_add(self, example: Any) -> Prepared:
        """POST /auth/credentials on the wallet, signed by its OAUTH session: an EMAIL_OTP (its own was
        revoked), an OAUTH identity not yet its own, or a passkey registered against a real challenge."""
        assert self.wallet is not None
        if example["type"] == "OAUTH":
            self.added += 1
            token = oidc_token(client_public_key=None, sub=f"{OIDC_SUBJECT}{self.added}")
            return Prepared(values={"oidcToken": token}, signer=self.session_key)
        if example["type"] == "PASSKEY":
            options = await self.post("/auth/credentials/passkey-challenges", {"accountId": self.wallet.id})
            attestation = Authenticator().register(options["challenge"])
            values = {"challenge": options["challenge"], "attestation": attestation}
            return Prepared(values=values, signer=self.session_key)
        return Prepared(signer=self.session_key)

    async def credential_to_verify(self, example: Any) -> Prepared:
        """The proof the example's type takes, made for real: an OTP sealed to a fresh OTP target with a
        new TEK (whose stamp completes the login), an OIDC token bound to a fresh client key, or a passkey
        assertion of a fresh challenge (its requestId in Request-Id)."""
        if example["type"] == "EMAIL_OTP":
            assert self.otp_wallet is not None
            [credential] = await self._credentials("EMAIL_OTP", self.otp_wallet)
            challenge = await self.post(f"/auth/credentials/{credential['id']}/challenge", {})
            tek = new_key()
            bundle = bundles.seal_otp_attempt(
                challenge["otpEncryptionTargetBundle"], otp_code="000000", public_key_hex=public_hex(tek)
            )
            return Prepared({"id": credential["id"]}, {"encryptedOtpBundle": bundle}, signer=tek)
        key = public_hex(new_key())
        if example["type"] == "OAUTH":
            token = oidc_token(client_public_key=key, sub=OIDC_SUBJECT)
            return Prepared(
                {"id": self.credential_ids["OAUTH"]}, {"oidcToken": token, "clientPublicKey": key}
            )
        passkey = self.credential_ids["PASSKEY"]
        challenge = await self.post(f"/auth/credentials/{passkey}/challenge", {"clientPublicKey": key})
        return Prepared(
            {"id": passkey},
            {"assertion": self.authenticator.assert_(challenge["challenge"])},
            headers={"Request-Id": challenge["requestId"]},
        )

    async def credential_to_challenge(self, example: Any) -> Prepared:
        """A passkey (the example carries a clientPublicKey: a fresh one) or an EMAIL_OTP credential."""
        if "clientPublicKey" in example:
            passkey = self.credential_ids["PASSKEY"]
            return Prepared({"id": passkey}, {"clientPublicKey": public_hex(new_key())})
        assert self.otp_wallet is not None
        [credential] = await self._credentials("EMAIL_OTP", self.otp_wallet)
        return Prepared({"id": credential["id"]})

    async def session_to_refresh(self, _example: Any) -> Prepared:
        """A new session of the wallet, refreshed to a fresh client key, the retry stamped by that session."""
        session, key = await self.oauth_session()
        return Prepared({"id": session["id"]}, {"clientPublicKey": public_hex(new_key())}, signer=key)

    async def the_wallet(self, example: Any) -> Prepared:
        """PATCH and export of the wallet, stamped by its session (an export's client key is fresh)."""
        assert self.wallet is not None
        values = {"clientPublicKey": public_hex(new_key())} if "clientPublicKey" in example else {}
        return Prepared({"id": self.wallet.id}, values, signer=self.session_key)


# What fills a path's parameters (and an example's placeholders), by operationId; else by parameter name,
# from the sandbox's ids.
PATH_PARAMETERS: dict[str, Callable[[Sandbox, Any], Awaitable[dict[str, str] | Prepared]]] = {
    "approvePendingPayment": Sandbox.pending_incoming_payment,
    "rejectPendingPayment": Sandbox.pending_incoming_payment,
    "confirmReceiptDelivery": Sandbox.pending_incoming_payment,
    "cancelTransaction": Sandbox.unsettled_transfer,
    "updateCustomerById": Sandbox.customer_of_the_examples_type,
    "updateAgent": Sandbox.fresh_agent,
    "updateAgentPolicy": Sandbox.fresh_agent,
    "rejectAgentAction": Sandbox.pending_agent_action,
    "updateCardById": Sandbox.card_to_change,
    "sandboxSimulateCardAuthorization": Sandbox.active_card,
    "sandboxSimulateCardFinancialAuthorization": Sandbox.active_card,
    "sandboxSimulateCardCreditAuthorization": Sandbox.active_card,
    "sandboxSimulateCardCreditAuthorizationAdvice": Sandbox.active_card,
    "sandboxSimulateCardFinancialCreditAuthorization": Sandbox.active_card,
    "sandboxSimulateCardBalanceInquiry": Sandbox.active_card,
    "sandboxSimulateCardClearing": Sandbox.card_transaction,
    "sandboxSimulateCardAuthorizationAdvice": Sandbox.card_transaction,
    "sandboxSimulateCardReturn": Sandbox.settled_card_transaction,
    "sandboxSimulateCardReturnReversal": Sandbox.returned_card_transaction,
    "replaceDocument": Sandbox.document,
    "createAuthCredential": Sandbox.credential_to_add,
    "verifyAuthCredential": Sandbox.credential_to_verify,
    "challengeAuthCredential": Sandbox.credential_to_challenge,
    "refreshAuthSession": Sandbox.session_to_refresh,
    "updateInternalAccount": Sandbox.the_wallet,
    "exportInternalAccount": Sandbox.the_wallet,
    "claimInvitation": Sandbox.pending_invitation,
    "sendCustomerPhoneVerification": Sandbox.customer_needing_contact_verification,
    "confirmCustomerEmailVerification": Sandbox.customer_needing_contact_verification,
    "confirmCustomerPhoneVerification": Sandbox.customer_needing_contact_verification,
    "decideVerification": Sandbox.verification_awaiting_review,
}
BY_NAME = {
    "customerId": ExampleIds.CUSTOMER,
    "accountId": ExampleIds.INTERNAL_ACCOUNT,
    "beneficialOwnerId": ExampleIds.BENEFICIAL_OWNER,
}


async def _prepare(sandbox: Sandbox, operation_id: str, path: str, example: Any) -> tuple[str, Prepared]:
    params = {name: sandbox.ids[example_id] for name, example_id in BY_NAME.items()}
    provider = PATH_PARAMETERS.get(operation_id)
    found = await provider(sandbox, example) if provider is not None else Prepared()
    prepared = found if isinstance(found, Prepared) else Prepared(params=found)
    params.update(prepared.params)
    return path.removeprefix(BASE_PATH).format(**params), prepared


def _bodies(document: dict[str, Any]) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """(operationId, method, path, media type, media) of every request body, the LAST ones last."""
    found = [
        (operation["operationId"], method, path, media_type, media)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        for media_type, media in operation.get("requestBody", {}).get("content", {}).items()
    ]
    return sorted(found, key=lambda entry: entry[0] in LAST)


async def test_every_request_body_has_an_example_that_is_answered_2xx(client, db, settings, runner) -> None:
    created = await create_platform(
        db, settings, name="Acme", currencies=["USD", "MXN", "USDC", "BTC", "EUR", "USDB"]
    )
    sandbox = await Sandbox.build(client, created["sandbox"], runner)
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
                url, prepared = await _prepare(sandbox, operation_id, path, value)
            except KeyError as missing:
                failures.append(f"{operation_id}: add a provider of {missing} to PATH_PARAMETERS")
                continue
            if media_type == "multipart/form-data":
                # the file part as a file (named .csv: a document's type is judged by its content), the rest as fields
                files = {"file": ("file.csv", value["file"].encode(), "text/csv")}
                data = {key: text for key, text in value.items() if key != "file"}
                response = await client.request(
                    method.upper(), url, auth=sandbox.auth, files=files, data=data
                )
            elif operation_id.startswith("agent"):
                agent = agent or await sandbox.agent()
                response = await client.request(method.upper(), url, headers=agent["headers"], json=value)
            else:
                value = {**value, **prepared.values}
                response = await client.request(
                    method.upper(), url, auth=sandbox.auth, json=value, headers=prepared.headers
                )
                if response.status_code == 202 and prepared.signer is not None:  # a signed retry
                    headers = {**prepared.headers, **signed_headers(prepared.signer, response.json())}
                    response = await client.request(
                        method.upper(), url, auth=sandbox.auth, json=value, headers=headers
                    )
                    if response.status_code == 202:
                        failures.append(f"{operation_id} example {name!r}: its signed retry answered 202")
            if not 200 <= response.status_code < 300:
                failures.append(
                    f"{operation_id} example {name!r}: {response.status_code} {response.text[:400]}"
                )
    assert not failures, "\n".join(failures)
