"""The checks every deployment shape must pass, run over real HTTP against a real server process."""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

import httpx
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from platpay import BASE_PATH
from platpay.kit.crypto.webhook_signing import verify_header
from tests.support.receiver import Received, Reply, WebhookReceiver
from tests.support.server import Credentials


def api_client(base_url: str, auth: Credentials | None = None) -> httpx.Client:
    return httpx.Client(base_url=base_url + BASE_PATH, auth=auth, timeout=15.0, trust_env=False)


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """Every error is the JSON body {status, code, message, details}."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert set(body) == {"status", "code", "message", "details"}, body
    assert body["status"] == status
    assert isinstance(body["code"], str) and body["code"]
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["details"], dict)
    if code is not None:
        assert body["code"] == code, body
    return body


def verify_signature_independently(public_key_pem: str, header_value: str, body: bytes) -> bool:
    """A receiver's check written from the format alone: {"v":"1","s":base64(DER ECDSA P-256 SHA-256)}."""
    header = json.loads(header_value)
    assert header["v"] == "1"
    signature = base64.b64decode(header["s"], validate=True)
    public_key = serialization.load_pem_public_key(public_key_pem.encode())
    assert isinstance(public_key, ec.EllipticCurvePublicKey)
    assert isinstance(public_key.curve, ec.SECP256R1)
    try:
        public_key.verify(signature, body, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def assert_signed(received: Received, public_key_pem: str) -> None:
    header = received.headers["x-svc-signature"]
    assert verify_header(public_key_pem, header, received.body)
    assert verify_signature_independently(public_key_pem, header, received.body)
    tampered = received.body.replace(b'"TEST"', b'"TEST "')
    assert tampered != received.body
    assert not verify_header(public_key_pem, header, tampered)
    assert not verify_signature_independently(public_key_pem, header, tampered)


def wait_delivered(client: httpx.Client, *, event_type: str, timeout: float = 20.0) -> dict[str, Any]:
    """The tenant's only delivery of `event_type`, once it is DELIVERED."""
    deadline = time.monotonic() + timeout
    while True:
        page = client.get("/webhooks/deliveries", params={"type": event_type}).json()
        if page["data"] and page["data"][0]["status"] == "DELIVERED":
            assert page["totalCount"] == 1, page
            return page["data"][0]
        assert time.monotonic() < deadline, f"no DELIVERED {event_type} delivery after {timeout}s: {page}"
        time.sleep(0.1)


def check_public_edges(base_url: str, sandbox: Credentials) -> None:
    """Config with good credentials; the error shape for bad credentials and unknown paths."""
    with api_client(base_url, sandbox) as client:
        response = client.get("/config")
        assert response.status_code == 200, response.text
        config = response.json()
        assert config["environment"] == "sandbox"
        assert "BEGIN PUBLIC KEY" in config["webhookPublicKey"]

    with api_client(base_url) as anonymous:
        for auth in [(sandbox[0], "wrong-secret"), ("no-such-client", sandbox[1])]:
            response = anonymous.get("/config", auth=auth)
            assert_error(response, 401)
            assert response.headers["www-authenticate"].startswith("Basic")
        response = anonymous.get("/config")
        assert_error(response, 401)
        assert response.headers["www-authenticate"].startswith("Basic")

        assert_error(anonymous.get("/no-such-endpoint", auth=sandbox), 404, "NOT_FOUND")
        assert_error(httpx.get(base_url + "/nowhere", trust_env=False), 404, "NOT_FOUND")


def check_tokens(base_url: str, sandbox: Credentials) -> None:
    """Idempotent create, the new token authenticates, keyset paging, delete revokes."""
    with api_client(base_url, sandbox) as client:
        key = f"e2e-{uuid.uuid4()}"
        request = {"name": "e2e reader", "permissions": ["VIEW", "TRANSACT"]}
        first = client.post("/tokens", json=request, headers={"Idempotency-Key": key})
        assert first.status_code == 201, first.text
        replay = client.post("/tokens", json=request, headers={"Idempotency-Key": key})
        assert replay.status_code == 201
        assert replay.content == first.content
        assert replay.headers.get("idempotent-replayed") == "true"
        token = first.json()
        assert token["clientSecret"]

        new_credentials = (token["clientId"], token["clientSecret"])
        with api_client(base_url, new_credentials) as as_new:
            assert as_new.get("/config").status_code == 200
            assert_error(as_new.patch("/config", json={"umaDomain": "x.example.com"}), 403)

        for index in range(3):
            response = client.post("/tokens", json={"name": f"e2e extra {index}", "permissions": ["VIEW"]})
            assert response.status_code == 201, response.text

        everything = client.get("/tokens", params={"limit": 100}).json()
        expected_ids = [item["id"] for item in everything["data"]]
        assert everything["totalCount"] == len(expected_ids) >= 5
        assert all("clientSecret" not in item for item in everything["data"])

        seen: list[str] = []
        params: dict[str, Any] = {"limit": 1}
        while True:
            page = client.get("/tokens", params=params).json()
            assert len(page["data"]) == 1
            assert page["totalCount"] == len(expected_ids)
            seen.extend(item["id"] for item in page["data"])
            if not page["hasMore"]:
                assert "nextCursor" not in page or page["nextCursor"] is None
                break
            params = {"limit": 1, "cursor": page["nextCursor"]}
            assert len(seen) <= len(expected_ids), "paging does not end"
        assert seen == expected_ids  # every token exactly once, in the same order

        deleted = client.delete(f"/tokens/{token['id']}")
        assert deleted.status_code == 204
        assert deleted.content == b""
        with api_client(base_url, new_credentials) as as_deleted:
            assert_error(as_deleted.get("/config"), 401)
        assert_error(client.get(f"/tokens/{token['id']}"), 404)
        assert_error(client.delete(f"/tokens/{token['id']}"), 404)
        assert client.get("/tokens").json()["totalCount"] == len(expected_ids) - 1


def check_webhooks(
    base_url: str, sandbox: Credentials, production: Credentials, receiver: WebhookReceiver
) -> None:
    """A new webhookEndpoint gets exactly one signed TEST event; the sandbox test endpoint reports the
    receiver's answer and is closed to production credentials."""
    with api_client(base_url, sandbox) as client:
        public_key = client.get("/config").json()["webhookPublicKey"]
        response = client.patch("/config", json={"webhookEndpoint": receiver.url})
        assert response.status_code == 200, response.text
        assert response.json()["webhookEndpoint"] == receiver.url

        [received] = receiver.wait_for(1, event_type="TEST", timeout=20)
        delivery = wait_delivered(client, event_type="TEST")
        assert delivery["attemptCount"] == 1
        assert len(receiver.received) == 1, [r.body for r in receiver.received]
        envelope = received.json
        assert set(envelope) == {"id", "type", "timestamp", "data"}
        assert envelope["id"] == delivery["id"]
        assert envelope["type"] == "TEST"
        assert received.headers["content-type"] == "application/json"
        assert_signed(received, public_key)

        # The same endpoint again is no change: no second TEST event.
        assert client.patch("/config", json={"webhookEndpoint": receiver.url}).status_code == 200

        receiver.replies(Reply(status=200, body=b'{"answer":"e2e"}'))
        response = client.post("/sandbox/webhooks/test")
        assert response.status_code == 200, response.text
        assert response.json() == {
            "url": receiver.url,
            "response_status": 200,
            "response_body": '{"answer":"e2e"}',
        }
        second = receiver.wait_for(2, event_type="TEST", timeout=10)[1]
        assert second.json["id"] != envelope["id"]
        assert_signed(second, public_key)

        receiver.replies(Reply(status=503, body=b"down for maintenance"))
        body = assert_error(client.post("/sandbox/webhooks/test"), 400, "WEBHOOK_DELIVERY_ERROR")
        assert body["details"]["response_status"] == 503
        assert body["details"]["response_body"] == "down for maintenance"
        assert len(receiver.received) == 3

    with api_client(base_url, production) as client:
        assert client.get("/config").json()["environment"] == "production"
        assert_error(client.post("/sandbox/webhooks/test"), 403, "FORBIDDEN")
    assert len(receiver.received) == 3
