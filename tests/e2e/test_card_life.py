"""A card's whole life over real HTTP: a real `platpay serve` (SQLite, and
PostgreSQL when the e2e setup names a server; its own job runner) and a real webhook receiver; platform
credentials and sandbox simulations only.

Cards are issued for an approved and refused for an unapproved cardholder; every legal state move is made
(PENDING_ISSUE→ACTIVE, ACTIVE→FROZEN→ACTIVE→CLOSED, ACTIVE→FROZEN→CLOSED, PENDING_ISSUE→CLOSED by the issuer)
and the illegal ones are refused with INTERFACE-FACTS §1.3's codes; the card is revealed once, limited by a
signed maxSpendPerTransaction. A USDB card funded by the cardholder's
holding account (INTERNAL_CRYPTO) and embedded wallet (EMBEDDED_WALLET) authorizes from the second when the
first is short, clears partially, over-clears (a post-hoc pull from the first source that covers it), expires,
returns partially and fully, takes every other network message (an advice, a financial authorization
returned and reversed, a credit, a failed pull confirmation, a balance inquiry: every simulation answers 202
and the card transaction follows), and closes with authorizations pending. After every step both accounts'
balances are checked against the test's own arithmetic; at the end the accounts' statements add up, every
expected webhook arrived signed with the right type and resource, and `platpay ledger verify` exits 0."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from platpay.kit.crypto.webhook_signing import verify_header
from tests.factories import CARD_INELIGIBLE_SUFFIXES, FULL_PERSON
from tests.support.api_checks import api_client, assert_error, verify_signature_independently
from tests.support.money import verify_ledger
from tests.support.processes import ProcessManager, process_env
from tests.support.receiver import WebhookReceiver
from tests.support.server import bootstrap_credentials, start_server
from tests.support.wallets import signed_headers, wallet_session_key

pytestmark = pytest.mark.e2e

HOLDING_FUNDS, WALLET_FUNDS = 300, 10_000  # USDB minor units
OURS = ("DECLINED", "EXPIRED", "UPDATED")  # card transaction events beyond the reference's five
CARD_KINDS = (
    "CARD_AUTHORIZATION_HOLD",
    "CARD_CLEARING_CAPTURE",
    "CARD_POST_HOC_PULL",
    "CARD_AUTHORIZATION_RELEASE",
    "CARD_RETURN",
    "CARD_AUTHORIZATION_ADVICE",
    "CARD_FINANCIAL_PULL",
    "CARD_RETURN_REVERSAL",
    "CARD_CREDIT",
)


class Cardholder:
    """A customer over HTTP: its USDB holding account and embedded wallet, and the balances the test
    expects them to have (available, total), with every pair each one has been at (for the webhooks)."""

    def __init__(self, client: httpx.Client, *, approve: bool, serial: int) -> None:
        self.client = client
        for attempt in range(20):  # an account id with a magic suffix would be refused as a funding source
            body = {**FULL_PERSON, "platformCustomerId": f"cardholder-{serial}-{attempt}"}
            created = client.post("/customers", json=body)
            assert created.status_code == 201, created.text
            self.id = created.json()["id"]
            accounts = self.accounts()
            if not any(a["id"].endswith(CARD_INELIGIBLE_SUFFIXES) for a in accounts):
                break
        else:
            raise AssertionError("20 customers in a row had an account id the card issuer refuses")
        if approve:
            kyc = client.post(f"/sandbox/customers/{self.id}/kyc", json={"kycStatus": "APPROVED"})
            assert kyc.status_code == 200, kyc.text
        by_type = {a["type"]: a["id"] for a in accounts}
        self.holding, self.wallet = by_type["INTERNAL_CRYPTO"], by_type["EMBEDDED_WALLET"]
        self.expected = {self.holding: (0, 0), self.wallet: (0, 0)}
        self.seen: dict[str, list[tuple[int, int]]] = {self.holding: [], self.wallet: []}

    def accounts(self) -> list[dict[str, Any]]:
        page = self.client.get(
            "/customers/internal-accounts", params={"customerId": self.id, "currency": "USDB"}
        )
        assert page.status_code == 200, page.text
        return page.json()["data"]

    def fund(self, account_id: str, amount: int) -> None:
        response = self.client.post(f"/sandbox/internal-accounts/{account_id}/fund", json={"amount": amount})
        assert response.status_code == 200, response.text
        self.move(account_id, available=amount, total=amount)

    def move(self, account_id: str, *, available: int = 0, total: int = 0) -> None:
        before = self.expected[account_id]
        self.expected[account_id] = (before[0] + available, before[1] + total)
        self.seen[account_id].append(self.expected[account_id])

    def check(self, step: str) -> None:
        """Both accounts' (balance, totalBalance) as the API lists them equal the test's arithmetic."""
        actual = {a["id"]: (a["balance"]["amount"], a["totalBalance"]["amount"]) for a in self.accounts()}
        expected = {account_id: self.expected[account_id] for account_id in (self.holding, self.wallet)}
        assert {k: actual[k] for k in expected} == expected, f"after {step}: {actual} != {expected}"
        for available, total in expected.values():
            assert 0 <= available <= total, step


def issue(client: httpx.Client, holder_id: str, sources: list[str], platform_card_id: str) -> httpx.Response:
    body = {
        "cardholderId": holder_id,
        "form": "VIRTUAL",
        "fundingSources": sources,
        "platformCardId": platform_card_id,
    }
    return client.post("/cards", json=body, headers={"Idempotency-Key": f"issue-{platform_card_id}"})


def wait_card(client: httpx.Client, card_id: str, state: str, *, timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        card = client.get(f"/cards/{card_id}").json()
        if card["state"] == state:
            return card
        assert time.monotonic() < deadline, f"card still {card['state']}, not {state}, after {timeout}s"
        time.sleep(0.05)


def issued(client: httpx.Client, holder_id: str, sources: list[str], platform_card_id: str) -> dict[str, Any]:
    created = issue(client, holder_id, sources, platform_card_id)
    assert created.status_code == 201, created.text
    assert created.json()["state"] == "PENDING_ISSUE" and created.json()["fundingSources"] == sources
    card = wait_card(client, created.json()["id"], "ACTIVE")  # the job runner provisioned it
    assert card["brand"] in ("VISA", "MASTERCARD") and len(card["last4"]) == 4, card
    assert card["expMonth"] and card["expYear"] and card["issuerRef"] and card["panEmbedUrl"], card
    assert card["currency"] == "USDB" and card.get("stateReason") is None, card
    return card


def patch(client: httpx.Client, card_id: str, key: Any = None, **body: Any) -> httpx.Response:
    """PATCH /cards/{id}: with a wallet session `key`, the signed retry (202, then the stamped retry)."""
    first = client.patch(f"/cards/{card_id}", json=body)
    if key is None:
        return first
    assert first.status_code == 202, first.text
    challenge = first.json()
    assert challenge["requestId"].startswith("Request:") and challenge["payloadToSign"], challenge
    return client.patch(f"/cards/{card_id}", json=body, headers=signed_headers(key, challenge))


def simulate(client: httpx.Client, card_id: str, what: str, **body: Any) -> httpx.Response:
    return client.post(f"/sandbox/cards/{card_id}/simulate/{what}", json=body)


def until(found: Any, what: str, *, timeout: float = 15.0) -> Any:
    """`found()` once it is truthy (the job runner applies a simulation after its 202), polled, bounded."""
    deadline = time.monotonic() + timeout
    while True:
        result = found()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what}: not there after {timeout}s"
        time.sleep(0.05)


def opened(
    client: httpx.Client,
    card_id: str,
    amount: int,
    status: str = "AUTHORIZED",
    *,
    what: str = "authorization",
    descriptor: str = "CAFE",
) -> dict[str, Any]:
    """A simulation that opens a card transaction (202 {issuerTransactionToken}), and the card transaction
    once the job runner recorded it."""
    if what == "balance_inquiry":  # a 0 authorization: no amount, no currency
        response = simulate(client, card_id, what, merchant={"descriptor": descriptor})
    else:
        response = simulate(
            client,
            card_id,
            what,
            amount=amount,
            currency={"code": "USDB"},
            merchant={"descriptor": descriptor},
        )
    assert response.status_code == 202, response.text
    token = response.json()["issuerTransactionToken"]

    def recorded() -> dict[str, Any] | None:
        listed = client.get(f"/cards/{card_id}/transactions", params={"limit": 100}).json()["data"]
        return next((t for t in listed if t["issuerTransactionToken"] == token), None)

    transaction = until(recorded, f"the card transaction of {what} {token}")
    assert transaction["status"] == status, transaction
    assert transaction["authorizedAmount"]["amount"] == amount, transaction
    return transaction


def authorize(client: httpx.Client, card_id: str, amount: int, status: str = "AUTHORIZED") -> dict[str, Any]:
    return opened(client, card_id, amount, status)


def message(
    client: httpx.Client, card_id: str, what: str, transaction_id: str, status: str, **body: Any
) -> dict[str, Any]:
    """A simulation on a card transaction (202 with its token), and the card transaction once changed."""
    before = client.get(f"/card-transactions/{transaction_id}").json()
    response = simulate(client, card_id, what, cardTransactionId=transaction_id, **body)
    assert response.status_code == 202, response.text
    assert response.json() == {"issuerTransactionToken": before["issuerTransactionToken"]}

    def changed() -> dict[str, Any] | None:
        now = client.get(f"/card-transactions/{transaction_id}").json()
        return now if now["updatedAt"] != before["updatedAt"] else None

    transaction = until(changed, f"{what} of {transaction_id}")
    assert transaction["status"] == status, transaction
    return transaction


def clear(
    client: httpx.Client, card_id: str, transaction_id: str, amount: int, status: str
) -> dict[str, Any]:
    return message(client, card_id, "clearing", transaction_id, status, amount=amount)


def give_back(
    client: httpx.Client, card_id: str, transaction_id: str, amount: int, status: str
) -> dict[str, Any]:
    return message(client, card_id, "return", transaction_id, status, amount=amount)


def settled(transaction: dict[str, Any]) -> int:
    return (transaction.get("settledAmount") or {"amount": 0})["amount"]


def refunded(transaction: dict[str, Any]) -> int:
    return (transaction.get("refundedAmount") or {"amount": 0})["amount"]


def check_statement(client: httpx.Client, account_id: str, expected: tuple[int, int]) -> Counter[str]:
    """The account's statement, every page: its changes add up to the balances, held = total − available,
    the newest running balances are the balances now. The kinds of its entries, counted."""
    entries: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 100}
    while True:
        page = client.get(f"/internal-accounts/{account_id}/entries", params=params)
        assert page.status_code == 200, page.text
        entries += page.json()["data"]
        if not page.json()["hasMore"]:
            break
        params["cursor"] = page.json()["nextCursor"]

    def amount(entry: dict[str, Any], name: str) -> int:
        assert entry[name]["currency"]["code"] == "USDB", entry
        return int(entry[name]["amount"])

    available, total = expected
    assert sum(amount(e, "availableChange") for e in entries) == available, entries
    assert sum(amount(e, "totalChange") for e in entries) == total, entries
    assert sum(amount(e, "heldChange") for e in entries) == total - available, entries
    for entry in entries:
        assert amount(entry, "totalChange") == amount(entry, "availableChange") + amount(entry, "heldChange")
    assert (amount(entries[0], "availableAfter"), amount(entries[0], "totalAfter")) == expected, entries[0]
    # the running balances, oldest first, are the statement's own running sums
    running = (0, 0)
    for entry in reversed(entries):
        running = (running[0] + amount(entry, "availableChange"), running[1] + amount(entry, "totalChange"))
        assert (amount(entry, "availableAfter"), amount(entry, "totalAfter")) == running, entry
    card_money = client.get(
        f"/internal-accounts/{account_id}/entries", params={"kind": list(CARD_KINDS), "limit": 100}
    )
    assert {e["id"] for e in card_money.json()["data"]} == {
        e["id"] for e in entries if e["kind"] in CARD_KINDS
    }
    assert all(e["cardTransactionId"] for e in card_money.json()["data"])
    return Counter(e["kind"] for e in entries)


def wait_webhooks(
    receiver: WebhookReceiver, expected: Counter[tuple[str, str]], *, timeout: float = 20.0
) -> dict[str, Any]:
    """Every received event once (by id); waits (bounded) until the (type, resource id) pairs of `expected`
    have all arrived, and then they must be exactly the expected ones."""

    def card_events() -> dict[str, Any]:
        events = {}
        for received in list(receiver.received):
            envelope = received.json
            if envelope["type"].startswith(("card.", "CARD_TRANSACTION.")):
                events[envelope["id"]] = received
        return events

    deadline = time.monotonic() + timeout
    while True:
        events = card_events()
        got = Counter((r.json["type"], r.json["data"]["id"]) for r in events.values())
        if not expected - got:
            break
        assert time.monotonic() < deadline, f"missing webhooks after {timeout}s: {expected - got}"
        time.sleep(0.1)
    assert got == expected, f"unexpected: {got - expected}; missing: {expected - got}"
    return events


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """SQLite (what `make run` serves), and a fresh PostgreSQL database when the e2e setup names a server."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'platpay.db'}"
    return str(request.getfixturevalue("pg_database"))


def test_a_card_life_over_http_balances_statements_webhooks_and_the_ledger_agree(
    processes: ProcessManager, tmp_path: Path, receiver: WebhookReceiver, database_url: str
) -> None:
    env = process_env(
        PLATPAY_DATABASE_URL=database_url,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_WEBHOOK_RETRY_BASE_SECONDS="0.1",
        PLATPAY_JOB_POLL_SECONDS="0.05",
    )
    server, base_url = start_server(processes, env, cwd=tmp_path)
    c = api_client(base_url, bootstrap_credentials(processes))
    public_key = c.get("/config").json()["webhookPublicKey"]
    configured = c.patch("/config", json={"webhookEndpoint": receiver.url})
    assert configured.status_code == 200, configured.text
    receiver.wait_for(1, event_type="TEST", timeout=20)
    expected_events: Counter[tuple[str, str]] = Counter()

    def moved(card: dict[str, Any]) -> None:
        expected_events["card.state_change", card["id"]] += 1

    def event(transaction: dict[str, Any], name: str | None = None) -> None:
        expected_events[f"CARD_TRANSACTION.{name or transaction['status']}", transaction["id"]] += 1

    # ---- issue: approved → 201 PENDING_ISSUE → ACTIVE; unapproved → 400; another's account → 400
    jane = Cardholder(c, approve=True, serial=1)
    h, w = jane.holding, jane.wallet
    jane.fund(h, HOLDING_FUNDS)
    jane.fund(w, WALLET_FUNDS)
    jane.check("funding")
    card = issued(c, jane.id, [h, w], "life-card-100")
    card_id = card["id"]
    assert card["fundingSources"] == [h, w]
    moved(card)
    replay = issue(c, jane.id, [h, w], "life-card-100")  # the same Idempotency-Key: the same card
    assert replay.status_code == 201 and replay.json()["id"] == card_id, replay.text
    assert card["processorRef"] and card["maxSpendPerTransaction"] is None, card

    # ---- reveal: a URL of the card page that shows once (then 404), never logged
    revealed = c.post(f"/cards/{card_id}/reveal")
    assert revealed.status_code == 200 and set(revealed.json()) == {"panEmbedUrl", "expiresAt"}, revealed.text
    reveal_path = "/" + revealed.json()["panEmbedUrl"].split("://", 1)[1].split("/", 1)[1]
    page = httpx.get(base_url + reveal_path, trust_env=False, timeout=10)
    assert page.status_code == 200 and card["last4"] in page.text, page.text
    assert httpx.get(base_url + reveal_path, trust_env=False, timeout=10).status_code == 404
    reveal_token = reveal_path.rsplit("/", 1)[-1]

    bob = Cardholder(c, approve=False, serial=2)
    refused = assert_error(
        issue(c, bob.id, [bob.holding], "life-card-200"), 400, "CARDHOLDER_KYC_NOT_APPROVED"
    )
    assert refused["details"]["cardholderId"] == bob.id
    ineligible = assert_error(
        issue(c, jane.id, [h, bob.holding], "life-card-201"), 400, "FUNDING_SOURCE_INELIGIBLE"
    )
    assert ineligible["details"]["fields"][0]["field"] == "fundingSources[1]", ineligible
    assert c.get("/cards", params={"cardholderId": bob.id}).json()["data"] == []

    # ---- authorize across two sources, the first (holding, 300) short: approved from the wallet
    declined = authorize(c, card_id, WALLET_FUNDS + 1, "DECLINED")  # neither covers it alone: never split
    assert declined["declineReason"] == "INSUFFICIENT_FUNDS" and declined.get("accountId") is None
    event(declined)
    jane.check("a decline")
    t1 = authorize(c, card_id, 1_000)
    assert t1["accountId"] == w, t1
    event(t1)
    jane.move(w, available=-1_000)
    jane.check("authorization of 1000 on the wallet")

    # ---- clear partially, then over-clear: the hold's rest is captured, the excess pulled (holding covers it)
    t1 = clear(c, card_id, t1["id"], 400, "PARTIALLY_SETTLED")
    assert settled(t1) == 400
    event(t1)
    jane.move(w, total=-400)
    jane.check("partial clearing 400")
    t1 = clear(c, card_id, t1["id"], 800, "SETTLED")  # 1200 cleared against 1000 authorized
    assert settled(t1) == 1_200 and t1["settlementSummary"] == {"count": 2, "totalAmount": 1_200}, t1
    assert t1["pullSummary"]["count"] == 2 and t1["pullSummary"]["totalAmount"] == 1_200, t1
    event(t1)
    jane.move(w, total=-600)  # the hold's remaining 600 captured
    jane.move(h, available=-200, total=-200)  # the first source in priority order covering 200
    jane.check("over-clearing 1200 of 1000")

    # ---- illegal PATCH bodies (refused before any signature), illegal moves
    for body in ({}, {"fundingSources": []}, {"state": "CLOSED", "fundingSources": [h]}):
        assert_error(c.patch(f"/cards/{card_id}", json=body), 400, "INVALID_INPUT")
    assert_error(c.patch(f"/cards/{card_id}", json={"state": "ACTIVE"}), 409, "INVALID_STATE_TRANSITION")

    # ---- reorder the sources: a wallet is a source, so its session signs (202, then the stamped retry)
    key = wallet_session_key(c, w)
    unsigned = c.patch(f"/cards/{card_id}", json={"fundingSources": [w, h]})
    assert unsigned.status_code == 202, unsigned.text
    assert c.get(f"/cards/{card_id}").json()["fundingSources"] == [h, w]  # nothing changed yet
    reordered = patch(c, card_id, key, fundingSources=[w, h])
    assert reordered.status_code == 200, reordered.text
    assert reordered.json()["fundingSources"] == [w, h] and reordered.json()["state"] == "ACTIVE"
    expected_events["card.funding_source_change", card_id] += 1
    listed = c.get("/cards", params={"accountId": h}).json()["data"]
    assert [item["id"] for item in listed] == [card_id]

    # ---- maxSpendPerTransaction: a new limit on a wallet-funded card is signed; the card's own value sent
    # back alone (a generated client sends it on every PATCH) is no change: 200 at once; above it declines
    limited = patch(c, card_id, key, maxSpendPerTransaction=5_000)
    assert limited.status_code == 200 and limited.json()["maxSpendPerTransaction"] == 5_000, limited.text
    same = c.patch(f"/cards/{card_id}", json={"maxSpendPerTransaction": 5_000})
    assert same.status_code == 200 and same.json() == limited.json(), same.text
    over = authorize(c, card_id, 5_001, "DECLINED")
    assert over["declineReason"] == "TRANSACTION_SIZE_LIMIT_EXCEEDED"
    event(over)
    jane.check("a decline above the limit")

    # ---- returns: partial (stays SETTLED, refundedAmount), too much (400), the rest (REFUNDED), then 409
    # 100 is what the holding account has left: it would pay, but the wallet is first now
    t2 = authorize(c, card_id, 100)
    assert t2["accountId"] == w, t2
    event(t2)
    jane.move(w, available=-100)
    t2 = clear(c, card_id, t2["id"], 100, "SETTLED")
    event(t2)
    jane.move(w, total=-100)
    jane.check("a 100 purchase settled")
    t2 = give_back(c, card_id, t2["id"], 40, "SETTLED")
    assert refunded(t2) == 40 and t2["refundSummary"] == {"count": 1, "totalAmount": 40}, t2
    assert [(r["amount"]["amount"], r["accountId"]) for r in t2["refunds"]] == [(40, w)], t2
    event(t2, "UPDATED")
    jane.move(w, available=40, total=40)
    jane.check("partial return 40")
    too_much = simulate(c, card_id, "return", cardTransactionId=t2["id"], amount=61)
    assert_error(too_much, 400, "INVALID_INPUT")
    t2 = give_back(c, card_id, t2["id"], 60, "REFUNDED")
    assert refunded(t2) == 100 and t2["refundSummary"] == {"count": 2, "totalAmount": 100}, t2
    event(t2)
    jane.move(w, available=60, total=60)
    jane.check("full return")
    assert_error(simulate(c, card_id, "return", cardTransactionId=t2["id"], amount=1), 409)

    # ---- an authorization expires (clearing amount 0): the hold goes back
    t3 = authorize(c, card_id, 700)
    event(t3)
    jane.move(w, available=-700)
    jane.check("authorization 700")
    t3 = message(c, card_id, "authorization_advice", t3["id"], "AUTHORIZED", amount=900)
    assert t3["authorizedAmount"]["amount"] == 900 and t3["pullSummary"]["totalAmount"] == 900, t3
    event(t3, "UPDATED")
    jane.move(w, available=-200)
    jane.check("an advice re-sizing it to 900")
    t3 = clear(c, card_id, t3["id"], 0, "EXPIRED")
    assert settled(t3) == 0
    event(t3)
    jane.move(w, available=900)
    jane.check("expiry")
    assert_error(simulate(c, card_id, "clearing", cardTransactionId=t3["id"], amount=0), 409)

    # ---- the other network messages: a financial authorization (settled at once), returned, the return
    # reversed; a credit authorization cleared onto the wallet; a failed pull confirmation; a balance inquiry
    t6 = opened(c, card_id, 300, "SETTLED", what="financial_authorization", descriptor="ATM 24TH ST")
    assert settled(t6) == 300 and t6["accountId"] == w and t6["direction"] == "DEBIT", t6
    event(t6)
    jane.move(w, available=-300, total=-300)
    jane.check("a financial authorization")
    t6 = give_back(c, card_id, t6["id"], 300, "REFUNDED")
    event(t6)
    jane.move(w, available=300, total=300)
    t6 = message(c, card_id, "return_reversal", t6["id"], "SETTLED")
    assert refunded(t6) == 0 and [r["status"] for r in t6["refunds"]] == ["REVERSED"], t6
    event(t6)
    jane.move(w, available=-300, total=-300)
    jane.check("a return reversed")
    t7 = opened(c, card_id, 250, what="credit_authorization", descriptor="ACME REFUND")
    assert t7["direction"] == "CREDIT" and t7["accountId"] == w, t7
    event(t7)
    jane.check("a credit authorization (pending)")
    t7 = clear(c, card_id, t7["id"], 250, "SETTLED")
    event(t7)
    jane.move(w, available=250, total=250)
    jane.check("a credit cleared")
    t8 = opened(c, card_id, 10, "EXCEPTION", descriptor="CAFE-006")  # the pull's confirmation fails
    assert t8["pullSummary"]["totalAmount"] == 0, t8
    event(t8)
    jane.check("a failed pull confirmation")
    inquiry = opened(c, card_id, 0, "SETTLED", what="balance_inquiry", descriptor="PUMP 12")
    event(inquiry)
    jane.check("a balance inquiry")

    # ---- ACTIVE → FROZEN (declines CARD_PAUSED) → ACTIVE, signed by the wallet's session
    frozen = patch(c, card_id, key, state="FROZEN")
    assert frozen.status_code == 200 and frozen.json()["state"] == "FROZEN", frozen.text
    moved(card)
    assert_error(c.patch(f"/cards/{card_id}", json={"state": "FROZEN"}), 409, "INVALID_STATE_TRANSITION")
    paused = authorize(c, card_id, 10, "DECLINED")
    assert paused["declineReason"] == "CARD_PAUSED"
    event(paused)
    jane.check("a decline while frozen")
    active = patch(c, card_id, key, state="ACTIVE")
    assert active.status_code == 200 and active.json()["state"] == "ACTIVE", active.text
    moved(card)

    # ---- close with authorizations pending: one partly cleared (→ SETTLED), one not (→ EXPIRED)
    t4 = authorize(c, card_id, 2_000)
    event(t4)
    jane.move(w, available=-2_000)
    t4 = clear(c, card_id, t4["id"], 500, "PARTIALLY_SETTLED")
    event(t4)
    jane.move(w, total=-500)
    t5 = authorize(c, card_id, 100)
    event(t5)
    jane.move(w, available=-100)
    jane.check("two pending authorizations")
    closed = patch(c, card_id, key, state="CLOSED")
    assert closed.status_code == 200, closed.text
    closed_card = closed.json()
    assert (closed_card["state"], closed_card["stateReason"], closed_card["fundingSources"]) == (
        "CLOSED",
        "CLOSED_BY_PLATFORM",
        [],
    ), closed_card
    assert closed_card.get("panEmbedUrl") is None
    moved(card)
    t4 = c.get(f"/card-transactions/{t4['id']}").json()
    t5 = c.get(f"/card-transactions/{t5['id']}").json()
    assert (t4["status"], settled(t4), t5["status"], settled(t5)) == ("SETTLED", 500, "EXPIRED", 0), (t4, t5)
    event(t4)
    event(t5)
    jane.move(w, available=1_500)  # t4's hold's rest released
    jane.move(w, available=100)  # t5's
    jane.check("close")
    # a return after close still completes
    t4 = give_back(c, card_id, t4["id"], 500, "REFUNDED")
    event(t4)
    jane.move(w, available=500, total=500)
    jane.check("a return after close")
    after_close = authorize(c, card_id, 10, "DECLINED")
    assert after_close["declineReason"] == "CARD_CLOSED"
    event(after_close)
    # a late presentment of t5 (expired at close) is force-posted: pulled from its sources, wallet first
    t5 = clear(c, card_id, t5["id"], 100, "SETTLED")
    assert settled(t5) == 100, t5
    event(t5)
    jane.move(w, available=-100, total=-100)
    jane.check("a late presentment after close")

    # ---- a closed card: closing again, any move, any change → 409; it stays readable
    assert_error(c.patch(f"/cards/{card_id}", json={"state": "CLOSED"}), 409, "CARD_ALREADY_CLOSED")
    assert_error(c.patch(f"/cards/{card_id}", json={"state": "ACTIVE"}), 409, "CARD_NOT_MUTABLE")
    assert_error(c.patch(f"/cards/{card_id}", json={"fundingSources": [h]}), 409, "CARD_NOT_MUTABLE")
    assert c.get(f"/cards/{card_id}").json() == closed_card

    # ---- the other legal moves: ACTIVE → FROZEN → CLOSED on a platform-custodied card (no signer: 200 at
    # once); PENDING_ISSUE → CLOSED by the issuer (…002); a card still PENDING_ISSUE (…001) takes no move
    plain = issued(c, jane.id, [h], "life-card-300")
    moved(plain)
    for state in ("FROZEN", "CLOSED"):
        response = patch(c, plain["id"], state=state)
        assert response.status_code == 200 and response.json()["state"] == state, response.text
        moved(plain)
    rejected = issue(c, jane.id, [h], "life-card-002")
    assert rejected.status_code == 201, rejected.text
    rejected_card = wait_card(c, rejected.json()["id"], "CLOSED")
    assert rejected_card["stateReason"] == "ISSUER_REJECTED" and rejected_card["fundingSources"] == []
    moved(rejected_card)
    pending = issue(c, jane.id, [h], "life-card-001")
    assert pending.status_code == 201, pending.text
    pending_id = pending.json()["id"]
    assert_error(patch(c, pending_id, state="FROZEN"), 409, "INVALID_STATE_TRANSITION")
    assert_error(patch(c, pending_id, state="ACTIVE"), 409, "INVALID_STATE_TRANSITION")
    not_active = authorize(c, pending_id, 10, "DECLINED")
    assert not_active["declineReason"] == "CARD_NOT_ACTIVE"
    event(not_active)
    jane.check("the other cards")

    # ---- reads: the card's transactions, with their final states
    final = {t["id"]: c.get(f"/card-transactions/{t['id']}").json() for t in (t1, t2, t3, t4, t5, t6, t7, t8)}
    assert {i: t["status"] for i, t in final.items()} == {
        t1["id"]: "SETTLED",
        t2["id"]: "REFUNDED",
        t3["id"]: "EXPIRED",
        t4["id"]: "REFUNDED",
        t5["id"]: "SETTLED",
        t6["id"]: "SETTLED",
        t7["id"]: "SETTLED",
        t8["id"]: "EXCEPTION",
    }
    history = c.get(f"/cards/{card_id}/transactions", params={"limit": 100}).json()
    assert {t["id"] for t in history["data"]} == set(final) | {
        declined["id"],
        over["id"],
        paused["id"],
        after_close["id"],
        inquiry["id"],
    }

    # ---- statements add up, and hold exactly the card money the test made
    holding_kinds = check_statement(c, h, jane.expected[h])
    wallet_kinds = check_statement(c, w, jane.expected[w])
    assert +holding_kinds == Counter({"SANDBOX_FUNDING": 1, "CARD_POST_HOC_PULL": 1}), holding_kinds  # t1
    assert +wallet_kinds == Counter(
        {
            "SANDBOX_FUNDING": 1,
            "CARD_AUTHORIZATION_HOLD": 5,  # t1..t5 (t8's failed pull took nothing)
            "CARD_AUTHORIZATION_ADVICE": 1,  # t3 re-sized
            "CARD_CLEARING_CAPTURE": 4,  # t1 twice, t2, t4
            "CARD_AUTHORIZATION_RELEASE": 3,  # t3 expired, t4 and t5 at close
            "CARD_RETURN": 4,  # t2 twice, t6, t4
            "CARD_RETURN_REVERSAL": 1,  # t6's return undone
            "CARD_FINANCIAL_PULL": 1,  # t6
            "CARD_CREDIT": 1,  # t7
            "CARD_POST_HOC_PULL": 1,  # t5's late presentment
        }
    ), wallet_kinds
    # all that is gone is t1's 1,200 (1,000 held and captured on the wallet, 200 pulled from the holding
    # account), t6's 300 (its return reversed) and t5's late 100 (pulled from the wallet), less t7's credit
    # of 250; everything else was returned or released
    assert jane.expected == {h: (HOLDING_FUNDS - 200,) * 2, w: (WALLET_FUNDS - 1_000 - 300 - 100 + 250,) * 2}

    # ---- webhooks: every card and card-transaction event once, signed, with the resource as it was
    events = wait_webhooks(receiver, expected_events)
    for received in events.values():
        header = received.headers["x-svc-signature"]
        assert verify_header(public_key, header, received.body), received.body
        assert verify_signature_independently(public_key, header, received.body)
        assert not verify_header(public_key, header, received.body.replace(b'"data"', b'"data" '))
    bodies = [r.json for r in events.values()]
    assert all(set(e) == {"id", "type", "timestamp", "data"} for e in bodies), bodies

    def state_changes(some_card_id: str) -> list[dict[str, Any]]:
        changes = [
            e["data"] for e in bodies if e["type"] == "card.state_change" and e["data"]["id"] == some_card_id
        ]
        return sorted(changes, key=lambda data: data["updatedAt"])

    walk = state_changes(card_id)
    assert [(d["state"], d["fundingSources"]) for d in walk] == [
        ("ACTIVE", [h, w]),
        ("FROZEN", [w, h]),
        ("ACTIVE", [w, h]),
        ("CLOSED", []),
    ], walk
    assert walk[-1] == closed_card
    [binding] = [e["data"] for e in bodies if e["type"] == "card.funding_source_change"]
    assert (binding["id"], binding["state"], binding["fundingSources"]) == (card_id, "ACTIVE", [w, h])
    assert [d["state"] for d in state_changes(plain["id"])] == ["ACTIVE", "FROZEN", "CLOSED"]
    assert state_changes(rejected_card["id"]) == [rejected_card]
    assert state_changes(pending_id) == []
    for envelope in bodies:
        kind, _, status = envelope["type"].partition(".")
        if kind == "CARD_TRANSACTION":  # the card transaction, as the reference's webhook carries it
            assert envelope["data"]["type"] == "CARD" and envelope["data"]["direction"] in ("DEBIT", "CREDIT")
            if status != "UPDATED":
                assert envelope["data"]["status"] == status, envelope
    # every type the reference names arrived (and ours: DECLINED, EXPIRED, UPDATED)
    assert {e["type"] for e in bodies if e["type"].startswith("CARD_TRANSACTION.")} == {
        f"CARD_TRANSACTION.{name}"
        for name in ("AUTHORIZED", "PARTIALLY_SETTLED", "SETTLED", "REFUNDED", "EXCEPTION", *OURS)
    }
    for transaction_id, transaction in final.items():  # the last event of each is the resource as GET has it
        [*_, last] = sorted(
            (
                e
                for e in bodies
                if e["type"].startswith("CARD_TRANSACTION.") and e["data"]["id"] == transaction_id
            ),
            key=lambda e: e["data"]["updatedAt"],
        )
        assert last["type"] == f"CARD_TRANSACTION.{transaction['status']}" and last["data"] == transaction, (
            last
        )
    updates = {e["data"]["id"]: e["data"] for e in bodies if e["type"] == "CARD_TRANSACTION.UPDATED"}
    assert set(updates) == {t2["id"], t3["id"]}
    partial_return = updates[t2["id"]]
    assert (partial_return["status"], partial_return["refundedAmount"]["amount"]) == ("SETTLED", 40)
    assert updates[t3["id"]]["authorizedAmount"]["amount"] == 900

    # INTERNAL_ACCOUNT.BALANCE_UPDATED (docs/cards.md: balances that move send it): one per step that moved an
    # account (a clearing that captures and releases on one account is one step), with the balances after it
    def announced() -> dict[str, Counter[tuple[int, int]]]:
        found: dict[str, Counter[tuple[int, int]]] = {h: Counter(), w: Counter()}
        unique = {r.json["id"]: r for r in list(receiver.received)}
        for received in unique.values():
            envelope = received.json
            if envelope["type"] == "INTERNAL_ACCOUNT.BALANCE_UPDATED" and envelope["data"]["id"] in found:
                assert verify_header(public_key, received.headers["x-svc-signature"], received.body)
                data = envelope["data"]
                found[data["id"]][data["balance"]["amount"], data["totalBalance"]["amount"]] += 1
        return found

    stepped = {account_id: Counter(jane.seen[account_id]) for account_id in (h, w)}
    deadline = time.monotonic() + 20
    while any(stepped[a] - announced()[a] for a in (h, w)):
        assert time.monotonic() < deadline, {a: stepped[a] - announced()[a] for a in (h, w)}
        time.sleep(0.1)
    assert announced() == stepped, (announced(), stepped)

    c.close()
    logged = server.stdout() + server.stderr()
    assert '"route": "/card-embed/{token}"' in logged and reveal_token not in logged
    verify_ledger(processes, env)
