"""GET/PATCH /config, the TEST webhook, and the sandbox test endpoint."""

from __future__ import annotations

import pytest

from platpay.kit import clock
from platpay.kit.crypto import p256
from platpay.kit.crypto.webhook_signing import verify_header
from tests.factories import create_platform
from tests.support.jobs import run_jobs_until
from tests.support.receiver import Reply, WebhookReceiver


class TestGetConfig:
    async def test_shape(self, client, auth):
        config = (await client.get("/config", auth=auth)).json()
        assert config["id"].startswith("PlatformConfig:")
        assert config["isRegulatedFinancialInstitution"] is False
        p256.public_key_from_pem(config["webhookPublicKey"])
        usd = next(c for c in config["supportedCurrencies"] if c["currencyCode"] == "USD")
        assert usd["providerRequiredCustomerFields"] == [
            "FULL_NAME",
            "BIRTH_DATE",
            "TAX_ID",
            "POSTAL_ADDRESS",
        ]
        assert set(usd["enabledTransactionTypes"]) == {"INCOMING", "OUTGOING"}

    async def test_regulated_flag_and_currencies_come_from_creation(self, client, db, settings):
        created = await create_platform(db, settings, is_regulated=True, currencies=["EUR", "MXN"])
        config = (await client.get("/config", auth=created["production"])).json()
        assert config["isRegulatedFinancialInstitution"] is True
        assert config["environment"] == "production"
        assert [c["currencyCode"] for c in config["supportedCurrencies"]] == ["EUR", "MXN"]

    async def test_sandbox_and_production_have_distinct_signing_keys(self, client, platform):
        sandbox = (await client.get("/config", auth=platform["sandbox"])).json()
        production = (await client.get("/config", auth=platform["production"])).json()
        assert sandbox["webhookPublicKey"] != production["webhookPublicKey"]
        assert sandbox["id"] != production["id"]


class TestPatchConfig:
    async def test_partial_update_keeps_other_fields(self, client, auth):
        before = (await client.get("/config", auth=auth)).json()
        after = (await client.patch("/config", auth=auth, json={"umaDomain": "Pay.Example.com"})).json()
        assert after["umaDomain"] == "pay.example.com"
        assert after["supportedCurrencies"] == before["supportedCurrencies"]
        assert after["updatedAt"] >= before["updatedAt"]
        assert (await client.get("/config", auth=auth)).json()["umaDomain"] == "pay.example.com"

    async def test_get_shows_each_change_even_when_changes_share_a_timestamp(self, client, auth):
        # A frozen clock (tests; sandbox time control) gives both updates the same updatedAt: the body
        # GET /config keeps per configuration version must still follow every change.
        clock.freeze()
        for domain in ("first.example.com", "second.example.com"):
            patched = await client.patch("/config", auth=auth, json={"umaDomain": domain})
            assert patched.status_code == 200, patched.text
            assert (await client.get("/config", auth=auth)).json()["umaDomain"] == domain

    async def test_supported_currencies_are_replaced(self, client, auth):
        body = {
            "supportedCurrencies": [
                {
                    "currencyCode": "EUR",
                    "minAmount": 100,
                    "maxAmount": 500000,
                    "requiredCounterpartyFields": [{"name": "NATIONALITY", "mandatory": False}],
                    "enabledTransactionTypes": ["OUTGOING"],
                }
            ]
        }
        config = (await client.patch("/config", auth=auth, json=body)).json()
        assert config["supportedCurrencies"][0]["currencyCode"] == "EUR"
        assert config["supportedCurrencies"][0]["providerRequiredCustomerFields"][0] == "FULL_NAME"
        assert len(config["supportedCurrencies"]) == 1

    @pytest.mark.parametrize(
        ("body", "field", "code"),
        [
            ({"umaDomain": "not a domain"}, "umaDomain", "INVALID_INPUT"),
            ({"umaDomain": None}, "umaDomain", "INVALID_INPUT"),
            ({"webhookEndpoint": "ftp://example.com/x"}, "webhookEndpoint", "INVALID_INPUT"),
            ({"webhookEndpoint": "http://"}, "webhookEndpoint", "INVALID_INPUT"),
            ({"webhookEndpoint": "https://user:pw@example.com/x"}, "webhookEndpoint", "INVALID_INPUT"),
            ({"isRegulatedFinancialInstitution": True}, "isRegulatedFinancialInstitution", "INVALID_INPUT"),
            ({"supportedCurrencies": []}, "supportedCurrencies", "INVALID_INPUT"),
            (
                {
                    "supportedCurrencies": [
                        {
                            "currencyCode": "XYZ",
                            "minAmount": 1,
                            "maxAmount": 2,
                            "requiredCounterpartyFields": [],
                            "enabledTransactionTypes": ["OUTGOING"],
                        }
                    ]
                },
                "supportedCurrencies.0.currencyCode",
                "INVALID_CURRENCY",
            ),
            (
                {
                    "supportedCurrencies": [
                        {
                            "currencyCode": "USD",
                            "minAmount": 5,
                            "maxAmount": 2,
                            "requiredCounterpartyFields": [],
                            "enabledTransactionTypes": ["OUTGOING"],
                        }
                    ]
                },
                "supportedCurrencies.0.minAmount",
                "INVALID_INPUT",
            ),
            (
                {
                    "supportedCurrencies": [
                        {
                            "currencyCode": "USD",
                            "minAmount": 1,
                            "maxAmount": 2,
                            "requiredCounterpartyFields": [],
                            "enabledTransactionTypes": ["SIDEWAYS"],
                        }
                    ]
                },
                "supportedCurrencies.0.enabledTransactionTypes.0",
                "INVALID_INPUT",
            ),
            (
                {
                    "supportedCurrencies": [
                        {
                            "currencyCode": "USD",
                            "minAmount": 1,
                            "maxAmount": 2,
                            "requiredCounterpartyFields": [],
                            "enabledTransactionTypes": ["OUTGOING"],
                        },
                        {
                            "currencyCode": "USD",
                            "minAmount": 1,
                            "maxAmount": 2,
                            "requiredCounterpartyFields": [],
                            "enabledTransactionTypes": ["OUTGOING"],
                        },
                    ]
                },
                "supportedCurrencies.1.currencyCode",
                "INVALID_INPUT",
            ),
        ],
    )
    async def test_invalid_updates_name_the_field_and_change_nothing(self, client, auth, body, field, code):
        before = (await client.get("/config", auth=auth)).json()
        response = await client.patch("/config", auth=auth, json=body)
        assert response.status_code == 400, response.text
        error = response.json()
        assert error["code"] == code
        assert field in [f["field"] for f in error["details"]["fields"]]
        assert (await client.get("/config", auth=auth)).json() == before

    async def test_production_can_be_restricted_to_public_https(self, client, platform, settings):
        settings.production_webhooks_require_public_https = True
        refused = await client.patch(
            "/config", auth=platform["production"], json={"webhookEndpoint": "https://127.0.0.1/x"}
        )
        assert refused.status_code == 400 and "public" in refused.json()["message"]
        refused = await client.patch(
            "/config", auth=platform["production"], json={"webhookEndpoint": "http://hooks.example.com/x"}
        )
        assert refused.status_code == 400 and "https" in refused.json()["message"]
        accepted = await client.patch(
            "/config", auth=platform["production"], json={"webhookEndpoint": "https://hooks.example.com/x"}
        )
        assert accepted.status_code == 200
        sandbox = await client.patch(
            "/config", auth=platform["sandbox"], json={"webhookEndpoint": "http://127.0.0.1:9/x"}
        )
        assert sandbox.status_code == 200

    async def test_loopback_http_is_accepted_by_default(self, client, platform):
        for creds in (platform["sandbox"], platform["production"]):
            response = await client.patch(
                "/config", auth=creds, json={"webhookEndpoint": "http://localhost:3000/hooks"}
            )
            assert response.status_code == 200


class TestTestEvent:
    async def test_setting_the_endpoint_sends_one_signed_test_event(self, client, auth, runner, receiver):
        config = (await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})).json()
        await run_jobs_until(runner, lambda: len(receiver.received) == 1)
        event = receiver.received[0]
        assert event.json["type"] == "TEST" and event.json["data"] == {}
        assert event.json["id"].startswith("Webhook:") and event.json["timestamp"].endswith("Z")
        assert verify_header(config["webhookPublicKey"], event.headers["x-svc-signature"], event.body)
        # setting the same URL again is not a change; another URL is
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        await client.patch("/config", auth=auth, json={"umaDomain": "other.example.com"})
        await runner.run_until_idle()
        assert len(receiver.received) == 1
        second = WebhookReceiver().start()
        try:
            await client.patch("/config", auth=auth, json={"webhookEndpoint": second.url})
            await run_jobs_until(runner, lambda: len(second.received) == 1)
            assert len(receiver.received) == 1
        finally:
            second.stop()

    async def test_clearing_the_endpoint(self, client, auth):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": "http://127.0.0.1:9/x"})
        config = (await client.patch("/config", auth=auth, json={"webhookEndpoint": None})).json()
        assert "webhookEndpoint" not in config


class TestSandboxTestWebhook:
    async def test_reports_what_the_receiver_answered(self, client, auth, receiver):
        receiver.replies(Reply(status=200, body=b'{"received":true}'))
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        response = await client.post("/sandbox/webhooks/test", auth=auth)
        assert response.status_code == 200
        assert response.json() == {
            "url": receiver.url,
            "response_status": 200,
            "response_body": '{"received":true}',
        }
        assert receiver.received[-1].json["type"] == "TEST"

    async def test_without_an_endpoint(self, client, auth):
        response = await client.post("/sandbox/webhooks/test", auth=auth)
        assert response.status_code == 400 and response.json()["code"] == "WEBHOOK_ENDPOINT_NOT_SET"

    async def test_receiver_error_is_reported_as_delivery_error(self, client, auth, receiver):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        receiver.replies(Reply(status=500, body=b"boom"))
        response = await client.post("/sandbox/webhooks/test", auth=auth)
        assert response.status_code == 400
        body = response.json()
        assert body["code"] == "WEBHOOK_DELIVERY_ERROR"
        assert body["details"]["response_status"] == 500 and body["details"]["response_body"] == "boom"

    async def test_unreachable_endpoint_is_a_delivery_error(self, client, auth):
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        await client.patch("/config", auth=auth, json={"webhookEndpoint": f"http://127.0.0.1:{port}/x"})
        response = await client.post("/sandbox/webhooks/test", auth=auth)
        assert response.status_code == 400 and response.json()["code"] == "WEBHOOK_DELIVERY_ERROR"

    async def test_production_credentials_are_refused(self, client, platform):
        response = await client.post("/sandbox/webhooks/test", auth=platform["production"])
        assert response.status_code == 403 and response.json()["code"] == "FORBIDDEN"
