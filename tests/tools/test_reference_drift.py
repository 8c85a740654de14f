"""tools/reference_drift.py: the structural drift between two reference documents, grouped by platpay domain,
and what of it platpay does not serve. Small synthetic documents cover every kind of change; the real June
and August documents, where they sit next to the checkout, give DRIFT-2026-08.md's headline counts."""

from __future__ import annotations

import copy
import gzip
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.openapi_reference import REFERENCE_DIR, REFERENCE_DOCUMENT

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "reference_drift.py"
JUNE_DOCUMENT = REFERENCE_DIR / "reference-openapi.yaml"
AUGUST_DOCUMENT = REFERENCE_DIR / REFERENCE_DOCUMENT
SERVED_SNAPSHOT = ROOT / "tests" / "data" / "openapi.json"


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference_drift", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["reference_drift"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


drift_tool = _load_tool()


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def json_body(schema: dict[str, Any], description: str = "ok") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def base_document() -> dict[str, Any]:
    """A small reference: cards, transactions with a discriminated union, invitations, errors, an SCA
    operation, a webhook, and a tree whose nodes refer to themselves."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "Reference", "version": "2025-10-13", "description": "The API."},
        "security": [{"BasicAuth": []}],
        "paths": {
            "/cards": {
                "get": {
                    "operationId": "listCards",
                    "summary": "List cards",
                    "parameters": [
                        {"name": "state", "in": "query", "description": "Filter", "schema": ref("CardState")},
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}},
                    ],
                    "responses": {"200": json_body({"type": "array", "items": ref("Card")})},
                },
                "post": {
                    "operationId": "createCard",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["cardholderId"],
                                    "properties": {
                                        "cardholderId": {"type": "string", "description": "Who holds it"},
                                        "form": {"type": "string", "enum": ["VIRTUAL", "PHYSICAL"]},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {"201": json_body(ref("Card")), "409": json_body(ref("Error409"))},
                },
            },
            "/cards/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "get": {"operationId": "getCard", "responses": {"200": json_body(ref("Card"))}},
            },
            "/transactions": {
                "get": {
                    "operationId": "listTransactions",
                    "responses": {"200": json_body({"type": "array", "items": ref("TransactionOneOf")})},
                }
            },
            "/invitations/{invitationCode}": {
                "get": {
                    "operationId": "getInvitation",
                    "parameters": [
                        {
                            "name": "invitationCode",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {"200": json_body(ref("Invitation"))},
                }
            },
            "/sca/factors": {
                "get": {"operationId": "listScaFactors", "responses": {"200": json_body(ref("ScaFactor"))}}
            },
            "/tree": {"get": {"operationId": "getTree", "responses": {"200": json_body(ref("Node"))}}},
        },
        "webhooks": {
            "card-state-change": {
                "post": {"requestBody": {"content": {"application/json": {"schema": ref("Card")}}}}
            }
        },
        "components": {
            "schemas": {
                "Card": {
                    "type": "object",
                    "description": "A card.",
                    "required": ["id", "state"],
                    "properties": {
                        "id": {"type": "string", "example": "Card:1"},
                        "state": ref("CardState"),
                        "limits": {
                            "type": "object",
                            "properties": {"daily": {"type": "integer", "description": "per day"}},
                        },
                        "fundingSources": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "CardState": {"type": "string", "enum": ["PENDING_ISSUE", "ACTIVE", "FROZEN", "CLOSED"]},
                "Transaction": {
                    "type": "object",
                    "required": ["id", "type"],
                    "properties": {"id": {"type": "string"}, "type": {"type": "string"}},
                },
                "OutgoingTransaction": {
                    "allOf": [
                        ref("Transaction"),
                        {
                            "type": "object",
                            "properties": {
                                "type": {"type": "string", "enum": ["OUTGOING"]},
                                "exchangeRate": {"type": "number"},
                            },
                        },
                    ]
                },
                "IncomingTransaction": {
                    "allOf": [
                        ref("Transaction"),
                        {"type": "object", "properties": {"type": {"type": "string", "enum": ["INCOMING"]}}},
                    ]
                },
                "TransactionOneOf": {
                    "oneOf": [ref("IncomingTransaction"), ref("OutgoingTransaction")],
                    "discriminator": {
                        "propertyName": "type",
                        "mapping": {
                            "INCOMING": "#/components/schemas/IncomingTransaction",
                            "OUTGOING": "#/components/schemas/OutgoingTransaction",
                        },
                    },
                },
                "Invitation": {
                    "type": "object",
                    "properties": {"invitationCode": {"type": "string"}, "inviter": ref("InvitationParty")},
                },
                "InvitationParty": {"type": "object", "properties": {"umaAddress": {"type": "string"}}},
                "Error409": {
                    "type": "object",
                    "properties": {
                        "status": {"type": "integer", "enum": [409]},
                        "code": {"type": "string", "enum": ["CONFLICT", "TRANSACTION_NOT_PENDING"]},
                    },
                },
                "ScaFactor": {"type": "object", "properties": {"id": {"type": "string"}}},
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "parent": ref("Node"),
                        "children": {"type": "array", "items": ref("Node")},
                    },
                },
                "Loop": {
                    "allOf": [ref("Cycle"), {"type": "object", "properties": {"a": {"type": "string"}}}]
                },
                "Cycle": {
                    "allOf": [ref("Loop"), {"type": "object", "properties": {"b": {"type": "string"}}}]
                },
            }
        },
    }


def drift(old: dict[str, Any], new: dict[str, Any], served: dict[str, Any] | None = None) -> Any:
    return drift_tool.compare(old, new, served=served)


def found(result: Any, kind: str, label: str) -> Any:
    """The one change of `kind` whose label is `label`."""
    matches = [change for change in result.changes if change.kind == kind and change.label() == label]
    assert len(matches) == 1, f"{kind} {label}: {len(matches)} found among {summary(result)[:80]}"
    return matches[0]


def summary(result: Any) -> list[tuple[str, str]]:
    return sorted((change.kind, change.label()) for change in result.changes)


class TestNothingToReport:
    def test_a_document_against_itself_reports_nothing(self) -> None:
        result = drift(base_document(), base_document())
        assert result.changes == []
        assert result.counts["operations"] == {"old": 7, "new": 7, "added": 0, "removed": 0, "changed": 0}

    def test_description_only_edits_report_nothing(self) -> None:
        old, new = base_document(), base_document()
        new["info"]["description"] = "The API, described anew."
        cards = new["paths"]["/cards"]
        cards["get"]["summary"] = "List every card"
        cards["get"]["description"] = "Pages of cards."
        cards["get"]["parameters"][0]["description"] = "Only cards in this state"
        cards["get"]["responses"]["200"]["description"] = "The cards"
        body = cards["post"]["requestBody"]["content"]["application/json"]["schema"]
        body["properties"]["cardholderId"]["description"] = "The customer holding the card"
        card = new["components"]["schemas"]["Card"]
        card["description"] = "A payment card."
        card["title"] = "Card"
        card["properties"]["id"]["example"] = "Card:2"
        card["properties"]["id"]["examples"] = ["Card:3"]
        card["properties"]["limits"]["properties"]["daily"]["description"] = "per calendar day"
        new["components"]["schemas"]["Node"]["properties"]["name"]["description"] = "what it is called"
        assert drift(old, new).changes == []

    def test_an_enumeration_reordered_and_a_path_parameter_renamed_are_no_change(self) -> None:
        old, new = base_document(), base_document()
        new["components"]["schemas"]["CardState"]["enum"].reverse()
        item = new["paths"].pop("/cards/{id}")
        item["parameters"][0]["name"] = "cardId"
        new["paths"]["/cards/{cardId}"] = item
        assert drift(old, new).changes == []


class TestOperations:
    def test_operations_added_and_removed_are_counted(self) -> None:
        old, new = base_document(), base_document()
        new["paths"]["/cards/{id}/reveal"] = {
            "post": {"operationId": "revealCard", "responses": {"200": json_body({"type": "object"})}}
        }
        del new["paths"]["/tree"]
        result = drift(old, new)
        assert found(result, "operation added", "POST /cards/{id}/reveal").detail == "revealCard"
        found(result, "operation removed", "GET /tree")
        assert result.counts["operations"] == {"old": 7, "new": 7, "added": 1, "removed": 1, "changed": 0}
        text = result.text()
        assert "Operations: 7 → 7 (1 added, 1 removed, 0 changed)" in text

    def test_parameters_by_location_and_name(self) -> None:
        old, new = base_document(), base_document()
        parameters = new["paths"]["/cards"]["get"]["parameters"]
        parameters[1]["required"] = True
        parameters[1]["schema"] = {"type": "string"}
        parameters.append({"name": "cursor", "in": "query", "required": True, "schema": {"type": "string"}})
        parameters.append({"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}})
        new["paths"]["/cards/{id}"]["get"]["parameters"] = [
            {"name": "expand", "in": "query", "schema": {"type": "string", "enum": ["fundingSources"]}}
        ]
        result = drift(old, new)
        assert (
            found(result, "parameter added", "GET /cards parameter query cursor").detail
            == "string (required)"
        )
        found(result, "parameter added", "GET /cards parameter header Idempotency-Key")
        found(result, "parameter added", "GET /cards/{id} parameter query expand")
        assert found(result, "required added", "GET /cards parameter query limit").detail == "now required"
        assert found(result, "type changed", "GET /cards parameter query limit").detail == "integer → string"
        assert (
            found(result, "constraint changed", "GET /cards parameter query limit").detail
            == "maximum: 100 → —"
        )

    def test_a_parameter_removed_and_its_enumeration_changed(self) -> None:
        old, new = base_document(), base_document()
        parameters = old["paths"]["/cards"]["get"]["parameters"]
        parameters.append({"name": "form", "in": "query", "schema": {"type": "string", "enum": ["VIRTUAL"]}})
        new["paths"]["/cards"]["get"]["parameters"] = [
            copy.deepcopy(parameters[0]),
            {"name": "form", "in": "query", "schema": {"type": "string", "enum": ["PHYSICAL"]}},
        ]
        result = drift(old, new)
        found(result, "parameter removed", "GET /cards parameter query limit")
        assert found(result, "enum values added", "GET /cards parameter query form").added == ["PHYSICAL"]
        assert found(result, "enum values removed", "GET /cards parameter query form").removed == ["VIRTUAL"]

    def test_request_bodies_and_responses(self) -> None:
        old, new = base_document(), base_document()
        post = new["paths"]["/cards"]["post"]
        body = post["requestBody"]["content"]["application/json"]["schema"]
        body["properties"]["maxSpendPerTransaction"] = {"type": ["integer", "null"]}
        body["properties"]["form"]["enum"].append("METAL")
        body["required"].append("form")
        post["responses"]["202"] = json_body(ref("Card"))
        del post["responses"]["409"]
        new["paths"]["/cards/{id}"]["get"]["operationId"] = "getCardById"
        new["paths"]["/tree"]["get"]["security"] = []
        result = drift(old, new)
        where = "POST /cards request body application/json"
        assert found(result, "property added", f"{where}.maxSpendPerTransaction").detail == "integer|null"
        assert found(result, "enum values added", f"{where}.form").added == ["METAL"]
        found(result, "required added", f"{where}.form")
        assert found(result, "response added", "POST /cards response 202").added == ["202"]
        found(result, "response removed", "POST /cards response 409")
        assert found(result, "operationId changed", "GET /cards/{id}").detail == "getCard → getCardById"
        assert found(result, "security changed", "GET /tree").detail == "BasicAuth → none"
        assert result.counts["operations"]["changed"] == 3


class TestSchemas:
    def test_properties_required_types_nested_objects_and_items(self) -> None:
        old, new = base_document(), base_document()
        card = new["components"]["schemas"]["Card"]
        card["properties"]["maxSpendPerTransaction"] = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
        card["required"] += ["maxSpendPerTransaction", "fundingSources"]
        del card["properties"]["limits"]["properties"]["daily"]
        card["properties"]["limits"]["properties"]["monthly"] = {"type": "integer"}
        card["properties"]["fundingSources"]["items"] = ref("FundingSource")
        card["properties"]["id"]["type"] = ["string", "null"]
        new["components"]["schemas"]["FundingSource"] = {"type": "object"}
        del new["components"]["schemas"]["ScaFactor"]
        result = drift(old, new)
        assert (
            found(result, "property added", "Card.maxSpendPerTransaction").detail
            == "integer | null (required)"
        )
        found(result, "required added", "Card.fundingSources")
        found(result, "property removed", "Card.limits.daily")
        found(result, "property added", "Card.limits.monthly")
        assert found(result, "type changed", "Card.fundingSources[]").detail == "string → FundingSource"
        assert found(result, "type changed", "Card.id").detail == "string → null|string"
        found(result, "schema added", "FundingSource")
        found(result, "schema removed", "ScaFactor")
        # The new property being required is part of its addition, not another change.
        assert ("required added", "Card.maxSpendPerTransaction") not in summary(result)

    def test_a_change_in_a_referenced_schema_is_reported_once_under_its_name(self) -> None:
        old, new = base_document(), base_document()
        new["components"]["schemas"]["CardState"]["enum"] = [
            "PENDING_KYC",
            "PROCESSING",
            "ACTIVE",
            "FROZEN",
            "CLOSED",
        ]
        result = drift(old, new)
        assert summary(result) == [("enum values added", "CardState"), ("enum values removed", "CardState")]
        assert found(result, "enum values added", "CardState").added == ["PENDING_KYC", "PROCESSING"]
        assert found(result, "enum values removed", "CardState").removed == ["PENDING_ISSUE"]
        # Card, GET /cards, POST /cards and the webhook all reach CardState: none repeats the change.

    def test_unions_discriminators_and_bases(self) -> None:
        old, new = base_document(), base_document()
        schemas = new["components"]["schemas"]
        schemas["CardTransaction"] = {
            "type": "object",
            "properties": {"type": {"type": "string", "enum": ["CARD"]}},
        }
        union = schemas["TransactionOneOf"]
        union["oneOf"] = [ref("OutgoingTransaction"), ref("CardTransaction")]
        union["discriminator"]["mapping"] = {
            "OUTGOING": "#/components/schemas/OutgoingTransaction",
            "CARD": "#/components/schemas/CardTransaction",
        }
        schemas["IncomingTransaction"]["allOf"][0] = ref("CardTransaction")
        result = drift(old, new)
        assert found(result, "variant added", "TransactionOneOf").added == ["CardTransaction"]
        assert found(result, "variant removed", "TransactionOneOf").removed == ["IncomingTransaction"]
        discriminator = found(result, "discriminator changed", "TransactionOneOf")
        assert (discriminator.added, discriminator.removed) == (["CARD"], ["INCOMING"])
        added = [
            c for c in result.changes if c.kind == "variant added" and c.subject == "IncomingTransaction"
        ]
        assert [(c.detail, c.added) for c in added] == [("allOf", ["CardTransaction"])]

    def test_a_property_moved_from_a_variant_to_its_base_is_reported_once_on_the_base(self) -> None:
        old, new = base_document(), base_document()
        schemas = new["components"]["schemas"]
        del schemas["OutgoingTransaction"]["allOf"][1]["properties"]["exchangeRate"]
        schemas["Transaction"]["properties"]["exchangeRate"] = {"type": "number"}
        schemas["Transaction"]["properties"]["direction"] = {"type": "string", "enum": ["CREDIT", "DEBIT"]}
        schemas["Transaction"]["required"].append("direction")
        result = drift(old, new)
        assert summary(result) == [
            ("property added", "Transaction.direction"),
            ("property added", "Transaction.exchangeRate"),
        ]

    def test_error_code_enumerations(self) -> None:
        old, new = base_document(), base_document()
        new["components"]["schemas"]["Error409"]["properties"]["code"]["enum"] = [
            "CONFLICT",
            "CARD_ALREADY_CLOSED",
            "TRANSACTION_NOT_CANCELLABLE",
        ]
        result = drift(old, new)
        added = found(result, "error codes added", "Error409.code")
        assert added.added == ["CARD_ALREADY_CLOSED", "TRANSACTION_NOT_CANCELLABLE"]
        assert added.domain == "errors"
        assert found(result, "error codes removed", "Error409.code").removed == ["TRANSACTION_NOT_PENDING"]

    def test_ref_cycles_end(self) -> None:
        """Node refers to itself (parent, children[]); Loop and Cycle are each other's allOf base."""
        old, new = base_document(), base_document()
        schemas = new["components"]["schemas"]
        schemas["Node"]["properties"]["weight"] = {"type": "integer"}
        schemas["Node"]["properties"]["children"]["items"] = {"type": "array", "items": ref("Node")}
        schemas["Loop"]["allOf"][1]["properties"]["c"] = {"type": "string"}
        schemas["Cycle"]["required"] = ["a"]
        result = drift(old, new)
        assert summary(result) == [
            ("property added", "Loop.c"),
            ("property added", "Node.weight"),
            ("required added", "Cycle.a"),
            ("type changed", "Node.children[]"),
        ]
        assert found(result, "type changed", "Node.children[]").detail == "Node → Node[]"
        # The schema that GET /tree reaches (through the cycle) is placed by the operations reaching it.
        assert found(result, "property added", "Node.weight").domain == "shared"


class TestDomains:
    def test_changes_are_grouped_by_platpay_domain(self) -> None:
        old, new = base_document(), base_document()
        schemas = new["components"]["schemas"]
        schemas["Card"]["properties"]["processorRef"] = {"type": "string"}
        schemas["Transaction"]["properties"]["pendingReason"] = {"type": "string"}
        schemas["InvitationParty"]["properties"]["fullName"] = {"type": "string"}
        schemas["ScaFactor"]["properties"]["type"] = {"type": "string"}
        schemas["StablecoinMint"] = {"type": "object"}
        new["paths"]["/sca/login/start"] = {"post": {"responses": {"200": json_body({"type": "object"})}}}
        new["paths"]["/customers/external-accounts/{id}/trust"] = {
            "post": {"responses": {"200": {"description": "ok"}}}
        }
        new["paths"]["/agents/me/transactions"] = {
            "get": {"responses": {"200": json_body(ref("TransactionOneOf"))}}
        }
        new["paths"]["/transactions/{transactionId}/cancel"] = {
            "post": {"responses": {"200": json_body(ref("TransactionOneOf"))}}
        }
        new["webhooks"]["card-transaction"] = {
            "post": {"requestBody": {"content": {"application/json": {"schema": ref("Card")}}}}
        }
        result = drift(old, new)
        by_domain = {domain: [c.label() for c in changes] for domain, changes in result.by_domain().items()}
        assert by_domain == {
            "payments/transactions": [
                "POST /transactions/{transactionId}/cancel",
                "Transaction.pendingReason",
            ],
            "cards": ["Card.processorRef"],
            "agents": ["GET /agents/me/transactions"],
            # InvitationParty is named by no rule: only GET /invitations/{code} reaches it.
            "invitations": ["InvitationParty.fullName"],
            "webhooks/events": ["webhook card-transaction"],
            "out-of-scope": [
                "POST /customers/external-accounts/{id}/trust",
                "POST /sca/login/start",
                "ScaFactor.type",
                "StablecoinMint",
            ],
        }
        text = result.text()
        assert text.index("## payments/transactions") < text.index("## cards") < text.index("## out-of-scope")

    @pytest.mark.parametrize(
        ("path", "domain"),
        [
            ("/customers/{customerId}", "customers"),
            ("/customers/end-user-terms", "customers"),
            ("/customers/external-accounts/{externalAccountId}/verify", "accounts"),
            ("/platform/internal-accounts", "accounts"),
            ("/verifications/{verificationId}", "onboarding/verifications"),
            ("/customers/{customerId}/kyc-link", "onboarding/verifications"),
            ("/transfer-out", "payments/transactions"),
            ("/quotes/{quoteId}/execute", "quotes"),
            ("/quotes/{quoteId}/authorize", "out-of-scope"),
            ("/cards/{id}/reveal", "cards"),
            ("/sandbox/cards/{id}/simulate/return_reversal", "sandbox"),
            ("/auth/credentials/{id}/verify", "wallets/auth"),
            ("/auth/delegated-keys", "out-of-scope"),
            ("/internal-accounts/{id}/export", "wallets/auth"),
            ("/agents/{agentId}/policy", "agents"),
            ("/invitations/{invitationCode}/claim", "invitations"),
            ("/config", "config/platforms"),
            ("/vasps", "out-of-scope"),
            ("/stablecoins/{stablecoinId}/mints", "out-of-scope"),
            ("/sca/factors", "out-of-scope"),
        ],
    )
    def test_paths_map_to_domains(self, path: str, domain: str) -> None:
        assert drift_tool.path_domain(path) == domain


def served_document(reference: dict[str, Any]) -> dict[str, Any]:
    """What platpay would serve of `reference`: its paths under the version prefix, as a server does."""
    served = copy.deepcopy(reference)
    served["paths"] = {f"/2025-10-13{path}": item for path, item in served["paths"].items()}
    served["paths"]["/healthz"] = {"get": {"responses": {"200": {"description": "ok"}}}}
    served.pop("webhooks")
    return served


class TestServed:
    def new_document(self) -> dict[str, Any]:
        new = base_document()
        schemas = new["components"]["schemas"]
        schemas["Card"]["properties"]["maxSpendPerTransaction"] = {"type": ["integer", "null"]}
        schemas["Card"]["properties"]["processorRef"] = {"type": "string"}
        schemas["CardState"]["enum"] += ["PENDING_KYC", "PROCESSING"]
        schemas["Transaction"]["properties"]["direction"] = {"type": "string"}
        schemas["Transaction"]["properties"]["pendingReason"] = {"type": "string", "enum": ["SCA_PENDING"]}
        schemas["Error409"]["properties"]["code"]["enum"] += ["CARD_ALREADY_CLOSED", "SCA_SESSION_REQUIRED"]
        schemas["ScaFactor"]["properties"]["type"] = {"type": "string"}
        schemas["TransactionOneOf"]["oneOf"].append(ref("CardTransaction"))
        schemas["CardTransaction"] = {"type": "object", "properties": {"id": {"type": "string"}}}
        schemas["Card"]["properties"]["scaChallenge"] = ref("ScaChallenge")
        schemas["ScaChallenge"] = {"type": "object"}
        new["paths"]["/cards/{id}/reveal"] = {"post": {"responses": {"200": json_body({"type": "object"})}}}
        new["paths"]["/sca/factors/confirm"] = {"post": {"responses": {"200": {"description": "ok"}}}}
        new["paths"]["/cards"]["get"]["parameters"].append(
            {"name": "Grid-Wallet-Signature", "in": "header", "schema": {"type": "string"}}
        )
        new["paths"]["/cards"]["get"]["parameters"].append(
            {"name": "cursor", "in": "query", "schema": {"type": "string"}}
        )
        return new

    def test_what_platpay_does_not_serve_is_named(self) -> None:
        old, new = base_document(), self.new_document()
        served = served_document(base_document())
        # platpay already serves processorRef, one of the new states and the cursor; it names the
        # signature header as SPEC does.
        served["components"]["schemas"]["Card"]["properties"]["processorRef"] = {"type": "string"}
        served["components"]["schemas"]["CardState"]["enum"].append("PROCESSING")
        served["paths"]["/2025-10-13/cards"]["get"]["parameters"] += [
            {"name": "cursor", "in": "query", "schema": {"type": "string"}},
            {"name": "Svc-Wallet-Signature", "in": "header", "schema": {"type": "string"}},
        ]
        result = drift(old, new, served)
        statuses = {(c.kind, c.label()): (c.served, c.missing) for c in result.changes}
        assert statuses[("operation added", "POST /cards/{id}/reveal")] == ("NOT SERVED", [])
        assert statuses[("property added", "Card.maxSpendPerTransaction")] == ("NOT SERVED", [])
        assert statuses[("property added", "Card.processorRef")] == ("served", [])
        assert statuses[("enum values added", "CardState")] == ("NOT SERVED", ["PENDING_KYC"])
        assert statuses[("property added", "Transaction.direction")] == ("NOT SERVED", [])
        assert statuses[("variant added", "TransactionOneOf")] == ("NOT SERVED", ["CardTransaction"])
        assert statuses[("parameter added", "GET /cards parameter query cursor")] == ("served", [])
        assert statuses[("parameter added", "GET /cards parameter header Grid-Wallet-Signature")] == (
            "served",
            [],
        )
        # The reference's SCA parts are out of scope, inside an in-scope schema too.
        assert statuses[("error codes added", "Error409.code")] == ("NOT SERVED", ["CARD_ALREADY_CLOSED"])
        assert found(result, "error codes added", "Error409.code").out_of_scope == ["SCA_SESSION_REQUIRED"]
        assert statuses[("operation added", "POST /sca/factors/confirm")] == ("out-of-scope", [])
        assert statuses[("property added", "ScaFactor.type")] == ("out-of-scope", [])
        assert statuses[("property added", "Card.scaChallenge")] == ("out-of-scope", [])
        # Nothing is served under this name: platpay may name it otherwise.
        assert statuses[("schema added", "CardTransaction")] == ("unknown", [])

        missing = {c.label() for c in result.not_served()}
        assert missing == {
            "POST /cards/{id}/reveal",
            "Card.maxSpendPerTransaction",
            "CardState",
            "Transaction.direction",
            "Transaction.pendingReason",
            "TransactionOneOf",
            "Error409.code",
        }
        text = result.text()
        assert "## Not served yet (7)" in text
        assert "Card.maxSpendPerTransaction: integer|null   [NOT SERVED]" in text

    def test_a_server_serving_the_new_document_misses_nothing(self) -> None:
        new = self.new_document()
        result = drift(base_document(), new, served_document(new))
        assert result.not_served() == []

    def test_the_command_line(self, tmp_path: Path) -> None:
        old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
        old.write_text(yaml.safe_dump(base_document()))
        new.write_text(yaml.safe_dump(self.new_document()))
        served = tmp_path / "openapi.json"
        served.write_text(json.dumps(served_document(base_document())))
        command = [sys.executable, str(TOOL), str(old), str(new), "--served", str(served)]
        text = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout
        assert "Operations: 7 → 9 (2 added, 0 removed, 1 changed)" in text
        assert "## cards:" in text and "## Not served yet" in text

        as_json = subprocess.run([*command, "--json"], capture_output=True, text=True, check=True, timeout=60)
        report = json.loads(as_json.stdout)
        assert report["counts"]["operations"]["added"] == 2
        assert {c["subject"] for c in report["notServed"]} >= {"POST /cards/{id}/reveal", "Card"}
        assert all(c["served"] == "out-of-scope" for c in report["domains"]["out-of-scope"])

        kept = tmp_path / "old.yaml.gz"  # the form tests/data keeps a document in
        kept.write_bytes(gzip.compress(old.read_bytes()))
        from_gzip = subprocess.run(
            [*command[:2], str(kept), *command[3:], "--json"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert json.loads(from_gzip.stdout)["counts"] == report["counts"]

        failing = subprocess.run([*command, "--fail-on-missing"], capture_output=True, text=True, timeout=60)
        assert failing.returncode == 1
        served.write_text(json.dumps(served_document(self.new_document())))
        passing = subprocess.run([*command, "--fail-on-missing"], capture_output=True, text=True, timeout=60)
        assert passing.returncode == 0, passing.stdout[-3000:]


@pytest.mark.skipif(
    not (JUNE_DOCUMENT.is_file() and AUGUST_DOCUMENT.is_file()),
    reason="the reference documents are not next to the checkout",
)
class TestTheRealDocuments:
    @pytest.fixture(scope="class")
    def result(self) -> Any:
        return drift_tool.compare(
            drift_tool.load_document(str(JUNE_DOCUMENT)),
            drift_tool.load_document(str(AUGUST_DOCUMENT)),
            served=drift_tool.load_document(str(SERVED_SNAPSHOT)),
        )

    def test_the_headline_counts_of_drift_2026_08(self, result: Any) -> None:
        operations = result.counts["operations"]
        assert (operations["old"], operations["new"], operations["added"], operations["removed"]) == (
            111,
            153,
            42,
            0,
        )
        assert "Operations: 111 → 153 (42 added, 0 removed" in result.text()

    def test_what_drift_2026_08_lists_is_found_in_its_domain(self, result: Any) -> None:
        def domain_of(kind: str, label: str) -> str:
            return found(result, kind, label).domain

        assert domain_of("property added", "Transaction.direction") == "payments/transactions"
        assert (
            domain_of("operation added", "POST /transactions/{transactionId}/cancel")
            == "payments/transactions"
        )
        assert domain_of("property added", "Card.maxSpendPerTransaction") == "cards"
        assert domain_of("property added", "CardTransaction.direction") == "cards"
        assert domain_of("variant added", "TransactionOneOf") == "payments/transactions"
        assert domain_of("operation added", "POST /sandbox/cards/{id}/simulate/return_reversal") == "sandbox"
        assert domain_of("enum values added", "EntityType") == "customers"
        assert domain_of("enum values added", "KycStatus") == "onboarding/verifications"
        assert domain_of("property added", "PlatformConfigUpdateRequest.feeConfigs") == "config/platforms"
        assert domain_of("property added", "ExternalAccount.ownershipType") == "accounts"
        assert domain_of("error codes added", "Error409.code") == "errors"
        assert found(result, "property removed", "IncomingTransaction.rateDetails")
        for kind, label in [
            ("operation added", "POST /sca/factors"),
            ("operation added", "POST /quotes/{quoteId}/authorize"),
            ("operation added", "GET /vasps"),
            ("operation added", "POST /auth/delegated-keys"),
            ("operation added", "POST /stablecoins/{stablecoinId}/mints"),
            ("schema added", "SmsOtpCredentialCreateRequest"),
        ]:
            assert domain_of(kind, label) == "out-of-scope", label

    def test_the_served_check_agrees_with_the_snapshot(self, result: Any) -> None:
        served = json.loads(SERVED_SNAPSHOT.read_text())
        served_operations = {
            f"{method.upper()} {drift_tool.template(path.removeprefix('/2025-10-13'))}"
            for path, item in served["paths"].items()
            for method in item
            if method in drift_tool.HTTP_METHODS
        }
        for change in result.changes:
            if change.kind == "operation added" and change.domain != "out-of-scope":
                assert (change.served == "served") == (change.anchor[1] in served_operations), change.label()
            assert change.domain != "out-of-scope" or change.served == "out-of-scope"
        # quoteId moved to the base transaction, and platpay's base transaction has carried it all along.
        assert found(result, "property added", "Transaction.quoteId").served == "served"

    def test_the_new_document_served_as_itself_misses_nothing(self) -> None:
        august = drift_tool.load_document(str(AUGUST_DOCUMENT))
        result = drift_tool.compare(drift_tool.load_document(str(JUNE_DOCUMENT)), august, served=august)
        assert [c.label() for c in result.not_served()] == []
