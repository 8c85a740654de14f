"""No existence oracle (nobody learns that an id exists by asking for it): a resource the caller may not see answers exactly as one that does
not exist. For every lookup by id, "not yours" and "does not exist" give byte-identical answers (status,
headers that matter, body) once the id echoed is replaced by a placeholder:

- platform scope: a resource of platform A requested by platform B (another tenant of the same
  environment), and by A's own production credentials (the other environment of the same platform);
- agent scope: a resource of customer C2 requested by the agent of customer C1 of the same tenant
  (everything under /agents/me).

Each probe is sent by the same caller with A's (C2's) real id and with a random, well-formed id of the same kind
that exists nowhere (that one twice: first to warm whatever a first request caches, then to compare); the two
must also run as many SQL statements (no query on one branch only: a timing oracle). Ids in request bodies and query filters are probed too, not only path ids. The
probes are checked against the served OpenAPI document: an operation with a path parameter that is neither
probed here nor in EXCLUDED (each with its reason) fails the test, so a new endpoint is not silently skipped.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import pkgutil
import random
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event
from sqlalchemy.util import await_only

import platpay
from platpay.db.database import Database
from platpay.errors import ResourceNotFound
from platpay.jobs.runner import JobRunner
from platpay.kit.ids import UUID_RE, uuid7
from tests.factories import (
    account_destination,
    account_source,
    create_platform,
    customer,
    external_account,
    internal_account,
    mxn_account,
    quote,
)
from tests.support.agents import connect, policy
from tests.support.cards import active_card, approved, approved_cardholder, funded_account
from tests.support.wallets import Wallet, new_key, public_hex, wallet_account

CURRENCIES = ["USD", "MXN", "USDC", "USDB"]
BUSINESS = {
    "customerType": "BUSINESS",
    "address": {"line1": "500 Market St", "postalCode": "94105", "country": "US"},
    "businessInfo": {"legalName": "Beta LLC", "taxId": "12-3456789", "incorporatedOn": "2015-06-01"},
}
OWNER = {
    "roles": ["UBO"],
    "ownershipPercentage": 40,
    "personalInfo": {
        "firstName": "Ada",
        "lastName": "Owner",
        "birthDate": "1980-02-03",
        "nationality": "US",
        "address": {"line1": "2 Oak St", "postalCode": "94105", "country": "US"},
        "idType": "SSN",
        "identifier": "123-45-6789",
    },
}
CSV = (
    "umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country\n"
    "$jo.roe@{domain},c-1,INDIVIDUAL,Jo Roe,1990-01-02,1 Main St,Springfield,IL,62701,US\n"
)
PDF = b"%PDF-1.4\n%%EOF\n"
CLIENT_KEY = public_hex(new_key())  # a point of P-256: a key that is none is refused before the lookup
DEVICE_CODE_PREFIX = "PLATPAY-AGENT-"
DEVICE_CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
INVITATION_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
# Headers that differ between any two answers whatever the id (the request's own id); every other header
# (content type and length, WWW-Authenticate, Retry-After, caching) must be equal.
VARYING_HEADERS = {"x-request-id", "date"}

# ---- the probes ---------------------------------------------------------------------------------------------
#
# A path or body names the id under test by its kind in braces, `{card}`; `{own.card}` is a resource of the
# caller itself (the same in both requests), so that the request gets as far as the lookup under test.


@dataclass(frozen=True)
class Probe:
    method: str
    path: str
    body: dict[str, Any] | None = None
    form: dict[str, Any] | None = None  # multipart fields (a file part is added)
    query: dict[str, str] | None = None
    status: int = 404  # what the unknown id answers (the request reaches the lookup)
    code: str | None = None
    # who asks: "platform" (another platform, then the other environment), "other_environment" alone, or
    # "agent" (the agent of another customer of the same tenant)
    scope: str = "platform"
    # why "not yours" may cost a statement more than "does not exist" (empty: it may not)
    costs_more: str = ""


P = Probe
TRANSFER = {"amount": 1_000}
QUOTE = {"lockedCurrencySide": "SENDING", "lockedCurrencyAmount": 1_000}

# Per operationId, the probes of its ids.
PROBES: dict[str, list[Probe]] = {
    # tokens
    "getTokenById": [P("GET", "/tokens/{token}", code="TOKEN_NOT_FOUND")],
    "deleteTokenById": [P("DELETE", "/tokens/{token}", code="TOKEN_NOT_FOUND")],
    # customers
    "getCustomerById": [P("GET", "/customers/{customer}", code="USER_NOT_FOUND")],
    "updateCustomerById": [
        P("PATCH", "/customers/{customer}", {"customerType": "INDIVIDUAL", "email": "x@example.org"})
    ],
    "deleteCustomerById": [P("DELETE", "/customers/{customer}")],
    "sendCustomerEmailVerification": [P("POST", "/customers/{customer}/verify-email", {})],
    "confirmCustomerEmailVerification": [P("POST", "/customers/{customer}/verify-email/confirm", {"code": "123456"})],
    "sendCustomerPhoneVerification": [P("POST", "/customers/{customer}/verify-phone", {"phoneNumber": "+33612345678"})],
    "confirmCustomerPhoneVerification": [P("POST", "/customers/{customer}/verify-phone/confirm", {"code": "123456"})],
    "sandboxUpdateCustomerKycStatus": [P("POST", "/sandbox/customers/{customer}/kyc", {"kycStatus": "APPROVED"})],
    "createCustomerKycLink": [P("POST", "/customers/{customer}/kyc-link", {"redirectUri": "https://app.example.com/done"})],
    "getBulkCustomerImportJob": [P("GET", "/customers/bulk/jobs/{bulk_job}", code="BULK_UPLOAD_JOB_NOT_FOUND")],
    # accounts
    "listInternalAccountEntries": [P("GET", "/internal-accounts/{internal_account}/entries")],
    "sandboxFundInternalAccount": [P("POST", "/sandbox/internal-accounts/{internal_account}/fund", {"amount": 100})],
    "updateInternalAccount": [P("PATCH", "/internal-accounts/{wallet}", {"privateEnabled": True})],
    "exportInternalAccount": [P("POST", "/internal-accounts/{wallet}/export", {"clientPublicKey": CLIENT_KEY})],
    "getCustomerExternalAccountById": [P("GET", "/customers/external-accounts/{external_account}")],
    "deleteCustomerExternalAccountById": [P("DELETE", "/customers/external-accounts/{external_account}")],
    "getPlatformExternalAccountById": [P("GET", "/platform/external-accounts/{platform_external_account}")],
    "deletePlatformExternalAccountById": [P("DELETE", "/platform/external-accounts/{platform_external_account}")],
    "listCustomerInternalAccounts": [P("GET", "/customers/internal-accounts", query={"customerId": "{customer}"}, status=200)],
    "listCustomerExternalAccounts": [P("GET", "/customers/external-accounts", query={"customerId": "{customer}"}, status=200)],
    "createCustomerExternalAccount": [
        P("POST", "/customers/external-accounts", {
            "customerId": "{customer}", "currency": "USD",
            "accountInfo": {"accountType": "USD_ACCOUNT", "accountNumber": "12345678901", "routingNumber": "011000015",
                            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"}},
        }, code="USER_NOT_FOUND"),
    ],
    # webhooks
    "getWebhookDeliveryById": [P("GET", "/webhooks/deliveries/{delivery}", code="WEBHOOK_DELIVERY_NOT_FOUND")],
    "redeliverWebhookDelivery": [P("POST", "/webhooks/deliveries/{delivery}/redeliver", code="WEBHOOK_DELIVERY_NOT_FOUND")],
    # onboarding
    "getVerification": [P("GET", "/verifications/{verification}")],
    "decideVerification": [P("POST", "/verifications/{verification}/decision", {"decision": "APPROVED"})],
    "createVerification": [P("POST", "/verifications", {"customerId": "{customer}"})],
    "listVerifications": [P("GET", "/verifications", query={"customerId": "{customer}"}, status=200)],
    "getBeneficialOwner": [P("GET", "/beneficial-owners/{beneficial_owner}")],
    "updateBeneficialOwner": [P("PATCH", "/beneficial-owners/{beneficial_owner}", {"ownershipPercentage": 30})],
    "createBeneficialOwner": [P("POST", "/beneficial-owners", {"customerId": "{business}", **OWNER})],
    "listBeneficialOwners": [P("GET", "/beneficial-owners", query={"customerId": "{business}"}, code="USER_NOT_FOUND")],
    "getDocument": [P("GET", "/documents/{document}")],
    "deleteDocument": [P("DELETE", "/documents/{document}")],
    "downloadDocument": [P("GET", "/documents/{document}/content")],
    "replaceDocument": [P("PUT", "/documents/{document}", form={"documentType": "PASSPORT", "country": "US"})],
    "uploadDocument": [
        P("POST", "/documents", form={"documentHolder": "{customer}", "documentType": "PASSPORT", "country": "US"}),
        P("POST", "/documents", form={"documentHolder": "{beneficial_owner}", "documentType": "PASSPORT", "country": "US"}),
    ],
    "listDocuments": [P("GET", "/documents", query={"documentHolder": "{customer}"}, status=200)],
    # payments
    "getTransactionById": [P("GET", "/transactions/{transaction}", code="TRANSACTION_NOT_FOUND"),
                           P("GET", "/transactions/{card_transaction}", code="TRANSACTION_NOT_FOUND")],
    "cancelTransaction": [P("POST", "/transactions/{transaction}/cancel", {}, code="TRANSACTION_NOT_FOUND"),
                          P("POST", "/transactions/{card_transaction}/cancel", {}, code="TRANSACTION_NOT_FOUND")],
    "approvePendingPayment": [P("POST", "/transactions/{incoming_payment}/approve", {}, code="TRANSACTION_NOT_FOUND")],
    "rejectPendingPayment": [P("POST", "/transactions/{incoming_payment}/reject", {}, code="TRANSACTION_NOT_FOUND")],
    "confirmReceiptDelivery": [
        P("POST", "/transactions/{incoming_payment}/confirm", {"receiptDeliveryConfirmedAt": "2025-10-13T12:00:00Z"},
          code="TRANSACTION_NOT_FOUND"),
    ],
    "listTransactions": [P("GET", "/transactions", query={"customerId": "{customer}"}, status=200)],
    "createTransferOut": [
        P("POST", "/transfer-out", {"source": {"accountId": "{internal_account}"},
                                    "destination": {"accountId": "{own.external_account}"}, **TRANSFER}),
        P("POST", "/transfer-out", {"source": {"accountId": "{own.internal_account}"},
                                    "destination": {"accountId": "{external_account}"}, **TRANSFER}, status=400),
    ],
    "createTransferIn": [
        P("POST", "/transfer-in", {"source": {"accountId": "{own.external_account}"},
                                   "destination": {"accountId": "{internal_account}"}, **TRANSFER}),
        P("POST", "/transfer-in", {"source": {"accountId": "{external_account}"},
                                   "destination": {"accountId": "{own.internal_account}"}, **TRANSFER}, status=400),
    ],
    "sandboxReceive": [
        P("POST", "/sandbox/uma/receive", {"senderUmaAddress": "$success.usd@sandbox.uma.money", "customerId": "{customer}",
                                           "receivingCurrencyCode": "USD", "receivingCurrencyAmount": 1000},
          code="USER_NOT_FOUND"),
        P("POST", "/sandbox/uma/receive", {"senderUmaAddress": "$success.usd@sandbox.uma.money",
                                           "receiverUmaAddress": "{uma_address}",
                                           "receivingCurrencyCode": "USD", "receivingCurrencyAmount": 1000},
          code="UMA_NOT_FOUND"),
    ],
    "estimateCryptoWithdrawalFee": [
        P("POST", "/crypto/estimate-withdrawal-fee", {"internalAccountId": "{crypto_account}", "currency": "USDC",
                                                      "cryptoNetwork": "SOLANA", "amount": 1_000_000,
                                                      "destinationAddress": "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"}),
    ],
    "getQuoteById": [P("GET", "/quotes/{quote}", code="QUOTE_NOT_FOUND")],
    "executeQuote": [P("POST", "/quotes/{quote}/execute", code="QUOTE_NOT_FOUND")],
    "createQuote": [
        P("POST", "/quotes", {"source": account_source("{internal_account}"),
                              "destination": account_destination("{own.external_account}"), **QUOTE}),
        P("POST", "/quotes", {"source": {"sourceType": "REALTIME_FUNDING", "customerId": "{customer}", "currency": "USD"},
                              "destination": account_destination("{own.external_account}"), **QUOTE}),
        P("POST", "/quotes", {"source": account_source("{own.internal_account}"),
                              "destination": account_destination("{external_account}"), **QUOTE}),
        P("POST", "/quotes", {"source": {"sourceType": "UMA_ADDRESS", "umaAddress": "{uma_address}", "currency": "USD"},
                              "destination": account_destination("{own.external_account}"), **QUOTE},
          code="UMA_NOT_FOUND"),
        P("POST", "/quotes", {"source": account_source("{own.internal_account}"),
                              "destination": {"destinationType": "UMA_ADDRESS", "umaAddress": "{uma_address}"}, **QUOTE},
          code="UMA_NOT_FOUND"),
        P("POST", "/quotes", {"source": account_source("{own.internal_account}"), "lookupId": "{lookup}",
                              "destination": account_destination("{own.external_account}"), **QUOTE},
          code="LOOKUP_REQUEST_NOT_FOUND"),
    ],
    "sandboxSend": [P("POST", "/sandbox/send", {"quoteId": "{quote}", "currencyCode": "USD"}, code="QUOTE_NOT_FOUND")],
    "lookupUma": [
        P("GET", "/receiver/uma/{uma_address}", code="UMA_NOT_FOUND"),
        P("GET", "/receiver/uma/{own.uma_address}", query={"customerId": "{customer}"}),
    ],
    "lookupExternalAccount": [
        P("GET", "/receiver/external-account/{external_account}"),
        P("GET", "/receiver/external-account/{own.external_account}", query={"customerId": "{customer}"}),
    ],
    # cards
    "getCardById": [P("GET", "/cards/{card}")],
    "updateCardById": [P("PATCH", "/cards/{card}", {"state": "FROZEN"}),
                       P("PATCH", "/cards/{own.card}", {"fundingSources": ["{internal_account}"]}, status=400)],
    "listCardTransactions": [P("GET", "/cards/{card}/transactions")],
    "getCardTransactionById": [P("GET", "/card-transactions/{card_transaction}", code="TRANSACTION_NOT_FOUND")],
    "listCards": [P("GET", "/cards", query={"cardholderId": "{customer}"}, status=200),
                  P("GET", "/cards", query={"accountId": "{internal_account}"}, status=200)],
    "listCardTransactionsByAccount": [P("GET", "/card-transactions", query={"accountId": "{internal_account}"}, status=200)],
    "createCard": [
        P("POST", "/cards", {"cardholderId": "{customer}", "form": "VIRTUAL", "fundingSources": ["{own.internal_account}"]},
          status=400),
        P("POST", "/cards", {"cardholderId": "{own.customer}", "form": "VIRTUAL", "fundingSources": ["{internal_account}"]},
          status=400),
    ],
    "sandboxSimulateCardAuthorization": [
        P("POST", "/sandbox/cards/{card}/simulate/authorization",
          {"amount": 100, "currency": {"code": "USD"}, "merchant": {"descriptor": "SHOP"}}),
    ],
    "sandboxSimulateCardFinancialAuthorization": [
        P("POST", "/sandbox/cards/{card}/simulate/financial_authorization",
          {"amount": 100, "currency": {"code": "USD"}, "merchant": {"descriptor": "SHOP"}}),
    ],
    "sandboxSimulateCardCreditAuthorization": [
        P("POST", "/sandbox/cards/{card}/simulate/credit_authorization",
          {"amount": 100, "currency": {"code": "USD"}, "merchant": {"descriptor": "SHOP"}}),
    ],
    "sandboxSimulateCardCreditAuthorizationAdvice": [
        P("POST", "/sandbox/cards/{card}/simulate/credit_authorization_advice",
          {"amount": 100, "currency": {"code": "USD"}, "merchant": {"descriptor": "SHOP"}}),
    ],
    "sandboxSimulateCardFinancialCreditAuthorization": [
        P("POST", "/sandbox/cards/{card}/simulate/financial_credit_authorization",
          {"amount": 100, "currency": {"code": "USD"}, "merchant": {"descriptor": "SHOP"}}),
    ],
    "sandboxSimulateCardBalanceInquiry": [
        P("POST", "/sandbox/cards/{card}/simulate/balance_inquiry", {"merchant": {"descriptor": "SHOP"}}),
    ],
    "sandboxSimulateCardAuthorizationAdvice": [
        P("POST", "/sandbox/cards/{card}/simulate/authorization_advice",
          {"cardTransactionId": "{own.card_transaction}", "amount": 1}),
        P("POST", "/sandbox/cards/{own.card}/simulate/authorization_advice",
          {"cardTransactionId": "{card_transaction}", "amount": 1}, status=400),
    ],
    "sandboxSimulateCardReturnReversal": [
        P("POST", "/sandbox/cards/{card}/simulate/return_reversal", {"cardTransactionId": "{own.card_transaction}"}),
        P("POST", "/sandbox/cards/{own.card}/simulate/return_reversal", {"cardTransactionId": "{card_transaction}"},
          status=400),
    ],
    "revealCard": [P("POST", "/cards/{card}/reveal")],
    "sandboxSimulateCardClearing": [
        P("POST", "/sandbox/cards/{card}/simulate/clearing", {"cardTransactionId": "{own.card_transaction}", "amount": 1}),
        P("POST", "/sandbox/cards/{own.card}/simulate/clearing", {"cardTransactionId": "{card_transaction}", "amount": 1},
          status=400),
    ],
    "sandboxSimulateCardReturn": [
        P("POST", "/sandbox/cards/{card}/simulate/return", {"cardTransactionId": "{own.card_transaction}", "amount": 1}),
        P("POST", "/sandbox/cards/{own.card}/simulate/return", {"cardTransactionId": "{card_transaction}", "amount": 1},
          status=400),
    ],
    # invitations: any platform of the environment reads and claims an invitation by its code (SPEC §4.8),
    # so only the other environment is a caller that must not see it
    "getInvitation": [P("GET", "/invitations/{invitation}", code="INVITATION_NOT_FOUND", scope="other_environment")],
    "claimInvitation": [P("POST", "/invitations/{invitation}/claim", {"inviteeUma": "{own.uma_address}"},
                          code="INVITATION_NOT_FOUND", scope="other_environment")],
    "cancelInvitation": [P("POST", "/invitations/{invitation}/cancel", code="INVITATION_NOT_FOUND",
                           scope="other_environment")],
    "createInvitation": [P("POST", "/invitations", {"inviterUma": "{uma_address}"}, code="USER_NOT_FOUND")],
    # agents (the platform's side)
    "getAgentById": [P("GET", "/agents/{agent}")],
    "updateAgent": [P("PATCH", "/agents/{agent}", {"isPaused": True})],
    "deleteAgent": [P("DELETE", "/agents/{agent}")],
    "updateAgentPolicy": [P("PATCH", "/agents/{agent}/policy", {"spendingLimits": {"dailyLimit": 1000}}),
                          P("PATCH", "/agents/{own.agent}/policy",
                            {"accountRestrictions": {"allowedAccountIds": ["{internal_account}"]}}, status=400)],
    "regenerateAgentDeviceCode": [P("POST", "/agents/{agent}/device-codes")],
    "listAgentAuditRecords": [P("GET", "/agents/{agent}/audit")],
    "approveAgentAction": [P("POST", "/agents/{agent}/actions/{action}/approve"),
                           P("POST", "/agents/{own.agent}/actions/{action}/approve")],
    "rejectAgentAction": [P("POST", "/agents/{agent}/actions/{action}/reject", {"reason": "no"}),
                          P("POST", "/agents/{own.agent}/actions/{action}/reject", {"reason": "no"})],
    "getAgentDeviceCodeStatus": [P("GET", "/agents/device-codes/{device_code}/status")],
    "createAgent": [P("POST", "/agents", {"name": "Bot", "customerId": "{customer}", "policy": policy()},
                      code="USER_NOT_FOUND"),
                    P("POST", "/agents", {"name": "Bot", "customerId": "{own.customer}", "policy": policy(
                        accountRestrictions={"allowedAccountIds": ["{internal_account}"]})}, status=400)],
    "listAgents": [P("GET", "/agents", query={"customerId": "{customer}"}, status=200)],
    "listAgentApprovals": [P("GET", "/agents/approvals", query={"agentId": "{agent}"}, status=200),
                           P("GET", "/agents/approvals", query={"customerId": "{customer}"}, status=200)],
    # embedded wallets
    "listAuthCredentials": [P("GET", "/auth/credentials", query={"accountId": "{wallet}"}, status=200)],
    "listAuthSessions": [P("GET", "/auth/sessions", query={"accountId": "{wallet}"}, status=200)],
    "createAuthCredential": [P("POST", "/auth/credentials", {"type": "EMAIL_OTP", "accountId": "{wallet}"})],
    "createPasskeyRegistrationChallenge": [P("POST", "/auth/credentials/passkey-challenges", {"accountId": "{wallet}"})],
    "revokeAuthCredential": [P("DELETE", "/auth/credentials/{credential}")],
    "verifyAuthCredential": [P("POST", "/auth/credentials/{credential}/verify", {"type": "EMAIL_OTP", "encryptedOtpBundle": "{}"})],
    "challengeAuthCredential": [P("POST", "/auth/credentials/{credential}/challenge", {})],
    "revokeAuthSession": [P("DELETE", "/auth/sessions/{session}")],
    "refreshAuthSession": [P("POST", "/auth/sessions/{session}/refresh", {"clientPublicKey": CLIENT_KEY})],
    # the agent's side: another customer's resources (C2's, its agent's) asked for by C1's agent
    "agentGetExternalAccount": [P("GET", "/agents/me/external-accounts/{external_account}", scope="agent")],
    "agentDeleteExternalAccount": [P("DELETE", "/agents/me/external-accounts/{external_account}", scope="agent")],
    "agentCreateExternalAccount": [
        P("POST", "/agents/me/external-accounts", {
            "customerId": "{customer}", "currency": "USD",
            "accountInfo": {"accountType": "USD_ACCOUNT", "accountNumber": "44455566677", "routingNumber": "011000015",
                            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"}},
        }, scope="agent"),
    ],
    "agentGetQuote": [P("GET", "/agents/me/quotes/{agent_quote}", code="QUOTE_NOT_FOUND", scope="agent"),
                      P("GET", "/agents/me/quotes/{customer_quote}", code="QUOTE_NOT_FOUND", scope="agent",
                        costs_more="a quote of the agent's own customer: who made it is its transaction's, read next")],
    "agentExecuteQuote": [P("POST", "/agents/me/quotes/{agent_quote}/execute", code="QUOTE_NOT_FOUND", scope="agent")],
    "agentGetTransaction": [P("GET", "/agents/me/transactions/{transaction}", code="TRANSACTION_NOT_FOUND", scope="agent"),
                            P("GET", "/agents/me/transactions/{card_transaction}", code="TRANSACTION_NOT_FOUND",
                              scope="agent")],
    "agentGetAction": [P("GET", "/agents/me/actions/{action}", scope="agent")],
    "agentCreateTransferOut": [
        P("POST", "/agents/me/transfer-out", {"source": {"accountId": "{internal_account}"},
                                              "destination": {"accountId": "{own.external_account}"}, **TRANSFER},
          scope="agent"),
        P("POST", "/agents/me/transfer-out", {"source": {"accountId": "{own.internal_account}"},
                                              "destination": {"accountId": "{external_account}"}, **TRANSFER},
          scope="agent"),
    ],
    "agentCreateTransferIn": [
        P("POST", "/agents/me/transfer-in", {"source": {"accountId": "{own.external_account}"},
                                             "destination": {"accountId": "{internal_account}"}, **TRANSFER},
          scope="agent"),
        P("POST", "/agents/me/transfer-in", {"source": {"accountId": "{external_account}"},
                                             "destination": {"accountId": "{own.internal_account}"}, **TRANSFER},
          scope="agent"),
    ],
    "agentCreateQuote": [
        P("POST", "/agents/me/quotes", {"source": account_source("{internal_account}"),
                                        "destination": account_destination("{own.external_account}"), **QUOTE},
          scope="agent"),
        P("POST", "/agents/me/quotes", {"source": account_source("{own.internal_account}"),
                                        "destination": account_destination("{external_account}"), **QUOTE},
          scope="agent"),
        P("POST", "/agents/me/quotes", {"source": account_source("{own.internal_account}"),
                                        "destination": account_destination("{internal_account}"), **QUOTE},
          scope="agent"),
        P("POST", "/agents/me/quotes", {"source": account_source("{own.internal_account}"), "lookupId": "{lookup}",
                                        "destination": account_destination("{own.external_account}"), **QUOTE},
          code="LOOKUP_REQUEST_NOT_FOUND", scope="agent"),
    ],
    "agentEvaluatePolicy": [
        P("POST", "/agents/me/policy/evaluate", {"type": "TRANSFER_OUT", "source": {"accountId": "{internal_account}"},
                                                 "destination": {"accountId": "{own.external_account}"}, **TRANSFER},
          scope="agent"),
        P("POST", "/agents/me/policy/evaluate", {"type": "TRANSFER_OUT", "source": {"accountId": "{own.internal_account}"},
                                                 "destination": {"accountId": "{external_account}"}, **TRANSFER},
          scope="agent"),
        P("POST", "/agents/me/policy/evaluate", {"type": "TRANSFER_IN", "source": {"accountId": "{external_account}"},
                                                 "destination": {"accountId": "{own.internal_account}"}, **TRANSFER},
          scope="agent"),
        P("POST", "/agents/me/policy/evaluate", {"type": "EXECUTE_QUOTE", "quoteId": "{agent_quote}"}, scope="agent"),
    ],
}  # fmt: skip

# Operations with a path parameter that no probe above covers, and why.
EXCLUDED = {
    # The code is the credential itself (whoever holds it may redeem it, unauthenticated): not a lookup of
    # another caller's resource.
    "redeemAgentDeviceCode": "the device code is a bearer secret, redeemed without credentials",
    # A capability URL: the embed token is the secret; no credentials, no tenant to be "another" of.
    "getCardPanEmbedPage": "the embed token is a bearer secret, served without credentials",
}


# ---- the two platforms and what A holds ----------------------------------------------------------------------


@dataclass
class Caller:
    """Who asks, and its own resources (`{own.kind}`)."""

    name: str
    reaches_lookups: bool  # every probe's request gets as far as its lookup (production's sandbox paths: 403)
    auth: tuple[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    own: dict[str, str] = field(default_factory=dict)


def _ok(response: httpx.Response, *statuses: int) -> dict[str, Any]:
    assert response.status_code in (statuses or (200, 201)), response.text
    return response.json()


async def _platform_a(client: httpx.AsyncClient, auth: tuple[str, str], runner: JobRunner) -> dict[str, str]:
    """Platform A's sandbox: customer C2 holding one of every resource kind (its agent's too), by kind."""
    c2 = await approved_cardholder(client, auth, currencies=["USD", "MXN", "USDC", "USDB"])
    usd = await funded_account(client, auth, c2["id"], 1_000_000)
    bank = await external_account(client, auth, c2["id"])
    mxn = await mxn_account(client, auth, c2["id"])
    ids = {
        "customer": c2["id"],
        "uma_address": c2["umaAddress"],
        "internal_account": usd["id"],
        "crypto_account": (await internal_account(client, auth, c2["id"], "USDC"))["id"],
        "external_account": bank["id"],
        "platform_external_account": (await external_account(client, auth, None))["id"],
    }
    sent = await client.post(
        "/transfer-out",
        auth=auth,
        json={"source": {"accountId": usd["id"]}, "destination": {"accountId": bank["id"]}, "amount": 1_000},
    )
    ids["transaction"] = (_ok(sent))["id"]
    incoming = await client.post(
        "/sandbox/uma/receive",
        auth=auth,
        json={"senderUmaAddress": "$success.usd@sandbox.uma.money", "customerId": c2["id"],
              "receivingCurrencyCode": "USD", "receivingCurrencyAmount": 1000},
    )  # fmt: skip
    ids["incoming_payment"] = (_ok(incoming))["id"]
    made = await quote(
        client, auth, source=account_source(usd["id"]), destination=account_destination(mxn["id"])
    )
    ids["quote"] = (_ok(made))["id"]
    ids["lookup"] = _ok(await client.get(f"/receiver/external-account/{bank['id']}", auth=auth))["lookupId"]
    card = await active_card(client, auth, runner, c2["id"], [usd["id"]])
    ids["card"] = card["id"]
    ids["card_transaction"] = (await approved(client, auth, card["id"], 500))["id"]
    ids["invitation"] = (
        _ok(await client.post("/invitations", auth=auth, json={"inviterUma": c2["umaAddress"]}))
    )["invitationCode"]
    agent = await connect(client, auth, c2["id"])
    ids["agent"] = agent["agent"]["id"]
    held = await client.post(
        "/agents/me/transfer-out",
        headers=agent["headers"],
        json={"source": {"accountId": usd["id"]}, "destination": {"accountId": bank["id"]}, "amount": 6_000},
    )  # above the approval threshold: PENDING_APPROVAL
    assert (_ok(held))["status"] == "PENDING_APPROVAL", held.text
    ids["action"] = held.json()["id"]
    agent_quote = await client.post(
        "/agents/me/quotes",
        headers=agent["headers"],
        json={"source": account_source(usd["id"]), "destination": account_destination(mxn["id"]), **QUOTE},
    )
    ids["agent_quote"] = (_ok(agent_quote))["id"]
    unconnected = _ok(
        await client.post(
            "/agents", auth=auth, json={"name": "Later", "customerId": c2["id"], "policy": policy()}
        )
    )
    ids["device_code"] = unconnected["deviceCode"]["code"]
    ids["token"] = (
        _ok(await client.post("/tokens", auth=auth, json={"name": "ci", "permissions": ["VIEW"]}))
    )["id"]
    ids["verification"] = (
        _ok(await client.post("/verifications", auth=auth, json={"customerId": c2["id"]}))
    )["id"]
    document = await client.post(
        "/documents",
        auth=auth,
        data={"documentHolder": c2["id"], "documentType": "PASSPORT", "country": "US"},
        files={"file": ("passport.pdf", PDF, "application/pdf")},
    )
    ids["document"] = (_ok(document))["id"]
    business = _ok(await client.post("/customers", auth=auth, json=BUSINESS))
    ids["business"] = business["id"]
    owner = await client.post("/beneficial-owners", auth=auth, json={"customerId": business["id"], **OWNER})
    ids["beneficial_owner"] = (_ok(owner))["id"]
    bulk = await client.post(
        "/customers/bulk/csv",
        auth=auth,
        files={
            "file": ("customers.csv", CSV.format(domain=c2["umaAddress"].split("@")[1]).encode(), "text/csv")
        },
    )
    ids["bulk_job"] = (_ok(bulk, 202))["jobId"]
    wallet = Wallet(client, auth, await wallet_account(client, auth))
    ids["wallet"] = wallet.id
    ids["credential"] = (await wallet.email_otp_credential())["id"]
    ids["session"] = (await wallet.email_otp_login())["id"]
    # Last: from now on every change queues a delivery (nothing delivers them: no runner runs after this).
    _ok(await client.patch("/config", auth=auth, json={"webhookEndpoint": "https://127.0.0.1:9/hooks"}))
    deliveries = _ok(await client.get("/webhooks/deliveries", auth=auth))
    ids["delivery"] = deliveries["data"][0]["id"]
    return ids


async def _own_platform_resources(
    client: httpx.AsyncClient, auth: tuple[str, str], runner: JobRunner
) -> dict[str, str]:
    """Another platform's own customer with accounts, a card and a card transaction."""
    person = await approved_cardholder(client, auth)
    usd = await funded_account(client, auth, person["id"], 100_000)
    card = await active_card(client, auth, runner, person["id"], [usd["id"]])
    return {
        "customer": person["id"],
        "uma_address": person["umaAddress"],
        "internal_account": usd["id"],
        "external_account": (await external_account(client, auth, person["id"]))["id"],
        "agent": await _agent_of(client, auth, person["id"]),
        "card": card["id"],
        "card_transaction": (await approved(client, auth, card["id"], 500))["id"],
    }


async def _own_production_resources(client: httpx.AsyncClient, auth: tuple[str, str]) -> dict[str, str]:
    person = await customer(client, auth)
    return {
        "customer": person["id"],
        "uma_address": person["umaAddress"],
        "internal_account": (await internal_account(client, auth, person["id"]))["id"],
        "external_account": (await external_account(client, auth, person["id"]))["id"],
        "agent": await _agent_of(client, auth, person["id"]),
    }


async def _agent_of(client: httpx.AsyncClient, auth: tuple[str, str], customer_id: str) -> str:
    created = await client.post(
        "/agents", auth=auth, json={"name": "Own", "customerId": customer_id, "policy": policy()}
    )
    return (_ok(created))["agent"]["id"]


async def _own_agent(client: httpx.AsyncClient, auth: tuple[str, str]) -> tuple[Caller, str]:
    """The agent of customer C1 of platform A with C1's accounts, and a quote the platform made for C1 (not
    the agent's: it may not see it either)."""
    c1 = await customer(client, auth, fullName="Cal One", currencies=["USD", "MXN"])
    usd = await funded_account(client, auth, c1["id"], 100_000)
    bank = await external_account(client, auth, c1["id"])
    mxn = await mxn_account(client, auth, c1["id"])
    made = await quote(
        client, auth, source=account_source(usd["id"]), destination=account_destination(mxn["id"])
    )
    agent = await connect(client, auth, c1["id"])
    own = {
        "customer": c1["id"],
        "internal_account": usd["id"],
        "external_account": bank["id"],
        "mxn_account": mxn["id"],
    }
    caller = Caller("the agent of another customer", True, headers=agent["headers"], own=own)
    return caller, (_ok(made))["id"]


# ---- sending a probe twice -------------------------------------------------------------------------------------


def same_shape(kind: str, value: str) -> str:
    """A random, well-formed id of the same kind as `value`, that exists nowhere: `Kind:<uuid7>` keeps its
    kind; an invitation or device code is drawn from its alphabet (its separators kept); a UMA address keeps
    its domain (so that it is looked up where the real one is)."""
    typed = re.fullmatch(rf"([A-Za-z]+):{UUID_RE}", value)
    if typed:
        return f"{typed.group(1)}:{uuid7()}"

    def drawn(text: str, alphabet: str) -> str:
        return "".join(random.choice(alphabet) if char in alphabet else char for char in text)

    if kind == "uma_address":
        user, domain = value.removeprefix("$").split("@")
        return f"${drawn(user, string.ascii_lowercase + string.digits)}@{domain}"
    if kind == "invitation":
        return drawn(value, INVITATION_ALPHABET)
    if kind == "device_code":
        return DEVICE_CODE_PREFIX + drawn(value.removeprefix(DEVICE_CODE_PREFIX), DEVICE_CODE_ALPHABET)
    raise AssertionError(f"no id shape known for {kind} ({value!r}): teach same_shape")


def _fill(template: Any, values: dict[str, str]) -> Any:
    if isinstance(template, dict):
        return {key: _fill(item, values) for key, item in template.items()}
    if isinstance(template, list):
        return [_fill(item, values) for item in template]
    if isinstance(template, str):
        return re.sub(r"\{([a-z_.]+)\}", lambda m: values[m.group(1)], template)
    return template


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str
    statements: (
        int  # SQL statements the request ran through the ORM (lean ones, like authentication's, aside)
    )


class StatementCounter:
    """Counts the statements run on the engine's connections, by the driver (so the lean ones too: they bypass
    SQLAlchemy's events): "not yours" must not cost a query that "does not exist" does not (a timing oracle).
    Authentication's read runs on connections of its own, the same for both."""

    def __init__(self, db: Database) -> None:
        self.count = 0
        engine = db.engine.sync_engine
        if db.is_sqlite:
            event.listen(engine, "connect", lambda dbapi, _record: await_only(
                dbapi.driver_connection.set_trace_callback(self._count)
            ))  # fmt: skip
        else:
            event.listen(engine, "checkout", lambda dbapi, _record, _proxy: (
                dbapi.driver_connection.add_query_logger(self._count)  # a set: added once per connection
            ))  # fmt: skip
        self.engine = db.engine

    async def start(self) -> None:
        await self.engine.dispose()  # SQLite: every connection from now on is a new one, traced

    def _count(self, _statement: Any) -> None:
        self.count += 1


async def _send(
    client: httpx.AsyncClient, probe: Probe, caller: Caller, ids: dict[str, str], counter: StatementCounter
) -> Answer:
    values = {**ids, **{f"own.{kind}": value for kind, value in caller.own.items()}}
    path = _fill(probe.path, values)
    kwargs: dict[str, Any] = {"params": _fill(probe.query, values) if probe.query else None}
    if probe.form is not None:
        kwargs["data"] = _fill(probe.form, values)
        kwargs["files"] = {"file": ("passport.pdf", PDF, "application/pdf")}
    elif probe.body is not None:
        kwargs["json"] = _fill(probe.body, values)
    before = counter.count
    response = await client.request(probe.method, path, auth=caller.auth, headers=caller.headers, **kwargs)
    await asyncio.sleep(0)  # asyncpg calls its query loggers soon after each query
    statements = counter.count - before
    body = response.text
    for kind, value in ids.items():  # the id echoed, whichever it is, becomes its kind's placeholder
        body = body.replace(value, f"<{kind}>")
        if kind == "device_code":  # a credential: echoed as its prefix and first characters only
            body = body.replace(value[: len(DEVICE_CODE_PREFIX) + 4], f"<{kind}>")
    headers = {k: v for k, v in response.headers.items() if k.lower() not in VARYING_HEADERS}
    return Answer(response.status_code, headers, body, statements)


def _kinds(probe: Probe) -> set[str]:
    text = repr((probe.path, probe.body, probe.form, probe.query))
    return {kind for kind in re.findall(r"\{([a-z_]+)\}", text)}


async def _compare(
    client: httpx.AsyncClient,
    operation_id: str,
    probe: Probe,
    caller: Caller,
    foreign: dict[str, str],
    counter: StatementCounter,
) -> list[str]:
    kinds = _kinds(probe)
    unknown_ids = {kind: same_shape(kind, foreign[kind]) for kind in kinds}
    await _send(client, probe, caller, unknown_ids, counter)  # first: whatever a first request caches
    theirs = await _send(client, probe, caller, {kind: foreign[kind] for kind in kinds}, counter)
    unknown = await _send(client, probe, caller, unknown_ids, counter)
    label = f"{operation_id} {probe.method} {probe.path} {probe.query or ''} by {caller.name}"
    failures = []
    if caller.reaches_lookups:
        if unknown.status != probe.status:
            failures.append(
                f"{label}: an unknown id answers {unknown.status}, expected {probe.status}: {unknown.body}"
            )
        if probe.code is not None and f'"code":"{probe.code}"' not in unknown.body:
            failures.append(f"{label}: an unknown id answers {unknown.body}, expected code {probe.code}")
    if (theirs.status, theirs.body) != (unknown.status, unknown.body):
        failures.append(
            f"{label}:\n    not yours: {theirs.status} {theirs.body}\n    unknown:   {unknown.status} {unknown.body}"
        )
    elif theirs.headers != unknown.headers:
        failures.append(f"{label}: headers differ:\n    {theirs.headers}\n    {unknown.headers}")
    elif theirs.statements != unknown.statements and not probe.costs_more:
        failures.append(
            f"{label}: not yours runs {theirs.statements} statements, unknown {unknown.statements}"
        )
    return failures


# ---- the tests -------------------------------------------------------------------------------------------------


async def test_every_operation_with_a_path_parameter_is_probed_or_excluded_with_its_reason(client) -> None:
    document = (await client.get("http://testserver/openapi.json")).json()
    operations = {
        operation["operationId"]
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in ("get", "post", "put", "patch", "delete") and "{" in path
    }
    missing = sorted(operations - set(PROBES) - set(EXCLUDED))
    assert not missing, (
        f"operations with a path id neither probed in PROBES nor listed in EXCLUDED: {missing}"
    )
    served = {
        operation["operationId"]
        for item in document["paths"].values()
        for method, operation in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert not (set(PROBES) | set(EXCLUDED)) - served, "probes of operations no longer served"


async def test_not_yours_and_does_not_exist_answer_the_same(client, db, settings, runner) -> None:
    alpha = await create_platform(db, settings, name="Alpha", currencies=CURRENCIES)
    beta = await create_platform(db, settings, name="Beta", currencies=CURRENCIES)
    other_platform = Caller(
        "another platform",
        True,
        auth=beta["sandbox"],
        own=await _own_platform_resources(client, beta["sandbox"], runner),
    )
    agent, customer_quote = await _own_agent(client, alpha["sandbox"])
    foreign = {**await _platform_a(client, alpha["sandbox"], runner), "customer_quote": customer_quote}
    other_environment = Caller(
        "the other environment",
        False,
        auth=alpha["production"],
        own=await _own_production_resources(client, alpha["production"]),
    )
    counter = StatementCounter(db)
    await counter.start()
    callers = {
        "platform": [other_platform, other_environment],
        "other_environment": [other_environment],
        "agent": [agent],
    }
    failures: list[str] = []
    count = 0
    for operation_id, probes in PROBES.items():
        for probe in probes:
            for caller in callers[probe.scope]:
                if any(f"own.{kind}" not in {f"own.{k}" for k in caller.own} for kind in _own_kinds(probe)):
                    continue  # the caller holds nothing of that kind to send (production has no cards)
                count += 1
                failures += await _compare(client, operation_id, probe, caller, foreign, counter)
    assert count >= 150
    assert not failures, (
        f"{len(failures)} of {count} probes tell a foreign id from an unknown one:\n" + "\n".join(failures)
    )


def _own_kinds(probe: Probe) -> set[str]:
    text = repr((probe.path, probe.body, probe.form, probe.query))
    return set(re.findall(r"\{own\.([a-z_]+)\}", text))


def _resource_errors() -> list[type[ResourceNotFound]]:
    for module in pkgutil.walk_packages(platpay.__path__, "platpay."):
        if module.name.endswith(".errors"):
            importlib.import_module(module.name)
    found, pending = [], [ResourceNotFound]
    while pending:
        for sub in pending.pop().__subclasses__():
            found.append(sub)
            pending.append(sub)
    return found


def test_each_resource_kind_has_one_not_found_error_whose_raise_sites_pass_the_id_alone() -> None:
    errors = _resource_errors()
    assert len(errors) >= 20
    kinds = [error.resource for error in errors]
    assert len(kinds) == len(set(kinds)), f"two not-found errors name one kind: {sorted(kinds)}"
    for error in errors:
        body = error("Thing:1").body()
        assert body == {
            "status": 404,
            "code": error.code,
            "message": f"{error.resource} 'Thing:1' not found",
            "details": {error.id_key: "Thing:1"},
        }, error
    # A raise site wording its own message (or adding details) would fail only when it runs: read them all.
    names = {error.__name__ for error in errors}
    wrong = []
    for path in Path(platpay.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            named = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
            if named and (len(node.args) != 1 or node.keywords):
                wrong.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    assert not wrong, "a not-found error takes the id alone:\n" + "\n".join(wrong)


async def test_an_agent_quotes_with_a_lookup_made_for_its_own_customer(client, db, settings) -> None:
    auth = (await create_platform(db, settings, currencies=CURRENCIES))["sandbox"]
    agent, _ = await _own_agent(client, auth)
    bank = agent.own["mxn_account"]
    looked_up = await client.get(
        f"/receiver/external-account/{bank}", auth=auth, params={"customerId": agent.own["customer"]}
    )
    body = {
        "source": account_source(agent.own["internal_account"]),
        "destination": account_destination(bank),
        "lookupId": _ok(looked_up)["lookupId"],
        **QUOTE,
    }
    made = await client.post("/agents/me/quotes", headers=agent.headers, json=body)
    assert made.status_code == 201, made.text
