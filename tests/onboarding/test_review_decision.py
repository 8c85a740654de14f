"""POST /verifications/{verificationId}/decision (platpay's operation, docs/onboarding.md "Deciding a manual
review"): a person decides a verification waiting in PENDING_MANUAL_REVIEW, with the provider's effects
(the verification's and the customer's status, their webhooks, a rejection's APPLICANT_REJECTED), who decided
and why; refusals; idempotency; two decisions at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import text

from platpay.onboarding import service as onboarding_service
from tests.factories import create_platform
from tests.support.api_errors import assert_error, bad_fields
from tests.support.onboarding import PERSON, create, png, uploaded, verify

VERIFICATION_EVENTS = ("VERIFICATION.APPROVED", "VERIFICATION.REJECTED")
CUSTOMER_EVENTS = ("CUSTOMER.KYC_APPROVED", "CUSTOMER.KYC_REJECTED")


async def _hooked(client, auth, receiver) -> None:
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    assert response.status_code == 200, response.text


async def _awaiting_review(client, auth, runner, *, full_name: str = "Jane Doe 001") -> dict[str, Any]:
    """A complete individual submitted for KYC whose review the provider left to a person (the sandbox's
    `001` name suffix; production's `manual` provider leaves every review so)."""
    person = await create(client, auth, {**PERSON, "fullName": full_name})
    await uploaded(client, auth, person["id"], "PASSPORT", png())
    await uploaded(client, auth, person["id"], "UTILITY_BILL")
    submitted = await verify(client, auth, person["id"])
    path = f"/verifications/{submitted['id']}"
    for _ in range(50):
        found = (await client.get(path, auth=auth)).json()
        if found["verificationStatus"] != "IN_PROGRESS":
            break
        await runner.run_until_idle(timeout=10)
    assert found["verificationStatus"] == "PENDING_MANUAL_REVIEW", found
    return found


async def _decide(client, auth, verification_id: str, body: Any, **headers: str):
    return await client.post(
        f"/verifications/{verification_id}/decision", auth=auth, json=body, headers=headers
    )


async def _delivered(runner, receiver) -> list[str]:
    """Every event type delivered once the outbox is empty (deliveries run in parallel: in no set order)."""
    await runner.run_until_idle(timeout=10)
    return [r.json["type"] for r in receiver.received]


async def _kyc_status(client, auth, customer_id: str) -> str:
    return (await client.get(f"/customers/{customer_id}", auth=auth)).json()["kycStatus"]


class TestDecisions:
    async def test_approve_moves_the_verification_and_the_customer_with_their_webhooks(
        self, client, auth, runner, receiver
    ):
        await _hooked(client, auth, receiver)
        waiting = await _awaiting_review(client, auth, runner)
        before = await _delivered(runner, receiver)
        decided = await _decide(client, auth, waiting["id"], {"decision": "APPROVED"})
        assert decided.status_code == 200, decided.text
        body = decided.json()
        assert body["verificationStatus"] == "APPROVED" and body["errors"] == []
        assert body["decidedBy"].startswith("Token:") and "decisionReason" not in body
        assert body == (await client.get(f"/verifications/{waiting['id']}", auth=auth)).json()
        assert await _kyc_status(client, auth, waiting["customerId"]) == "APPROVED"
        after = (await _delivered(runner, receiver))[len(before) :]
        assert sorted(after) == ["CUSTOMER.KYC_APPROVED", "VERIFICATION.APPROVED"]
        assert receiver.of_type("VERIFICATION.APPROVED")[0].json["data"] == body

    async def test_reject_names_the_applicant_with_the_reason_given(self, client, auth, runner, receiver):
        await _hooked(client, auth, receiver)
        waiting = await _awaiting_review(client, auth, runner)
        before = await _delivered(runner, receiver)
        decided = await _decide(
            client, auth, waiting["id"], {"decision": "REJECTED", "reason": "  document altered \n"}
        )
        assert decided.status_code == 200, decided.text
        body = decided.json()
        assert body["verificationStatus"] == "REJECTED"
        assert body["errors"] == [
            {"resourceId": waiting["customerId"], "type": "APPLICANT_REJECTED", "reason": "document altered"}
        ]
        assert body["decisionReason"] == "document altered"
        assert await _kyc_status(client, auth, waiting["customerId"]) == "REJECTED"
        after = (await _delivered(runner, receiver))[len(before) :]
        assert sorted(after) == ["CUSTOMER.KYC_REJECTED", "VERIFICATION.REJECTED"]
        assert receiver.of_type("VERIFICATION.REJECTED")[0].json["data"] == body
        customer = (await client.get(f"/customers/{waiting['customerId']}", auth=auth)).json()
        assert receiver.of_type("CUSTOMER.KYC_REJECTED")[0].json["data"] == customer

    async def test_an_approval_may_say_why(self, client, auth, runner):
        waiting = await _awaiting_review(client, auth, runner)
        decided = await _decide(
            client, auth, waiting["id"], {"decision": "APPROVED", "reason": "called them"}
        )
        assert decided.status_code == 200, decided.text
        assert decided.json()["decisionReason"] == "called them" and decided.json()["errors"] == []

    async def test_the_deciding_token_is_recorded(self, client, auth, runner):
        waiting = await _awaiting_review(client, auth, runner)
        token = (
            await client.post("/tokens", auth=auth, json={"name": "ops", "permissions": ["MANAGE"]})
        ).json()
        decided = await _decide(
            client, (token["clientId"], token["clientSecret"]), waiting["id"], {"decision": "APPROVED"}
        )
        assert decided.status_code == 200, decided.text
        assert decided.json()["decidedBy"] == token["id"]

    async def test_production_credentials_decide_a_production_review(
        self, client, db, settings, runner, receiver
    ):
        production = (await create_platform(db, settings))["production"]
        await _hooked(client, production, receiver)
        # production's KYC provider (`manual`, the default) leaves every review to a person
        waiting = await _awaiting_review(client, production, runner, full_name="Jane Doe")
        decided = await _decide(client, production, waiting["id"], {"decision": "APPROVED"})
        assert decided.status_code == 200, decided.text
        assert decided.json()["verificationStatus"] == "APPROVED"
        assert await _kyc_status(client, production, waiting["customerId"]) == "APPROVED"
        types = await _delivered(runner, receiver)
        assert types.count("VERIFICATION.APPROVED") == 1 and types.count("CUSTOMER.KYC_APPROVED") == 1

    async def test_the_awaiting_count_follows_the_decisions(self, client, auth, db, runner, platform):
        first = await _awaiting_review(client, auth, runner)
        await _awaiting_review(client, auth, runner)

        async def count() -> int:
            async with db.read() as session:
                tenant_id = await _tenant_of(session, first["id"])
                return await onboarding_service.count_awaiting_review(session, tenant_id=tenant_id)

        assert await count() == 2
        assert (await _decide(client, auth, first["id"], {"decision": "APPROVED"})).status_code == 200
        assert await count() == 1


async def _tenant_of(session, verification_id: str) -> str:
    """The verification's tenant (the service takes a tenant's id; the API never shows one)."""
    found = await session.execute(
        text("SELECT tenant_id FROM verifications WHERE id = :id"), {"id": verification_id}
    )
    return str(found.scalar_one())


class TestRefusals:
    async def test_a_rejection_without_a_reason_names_reason(self, client, auth, runner):
        waiting = await _awaiting_review(client, auth, runner)
        for body in ({"decision": "REJECTED"}, {"decision": "REJECTED", "reason": "   "}):
            refused = assert_error(await _decide(client, auth, waiting["id"], body), 400, "INVALID_INPUT")
            assert set(bad_fields(refused)) == {"reason"}, refused
        too_long = await _decide(client, auth, waiting["id"], {"decision": "REJECTED", "reason": "x" * 501})
        assert set(bad_fields(assert_error(too_long, 400, "INVALID_INPUT"))) == {"reason"}
        still = (await client.get(f"/verifications/{waiting['id']}", auth=auth)).json()
        assert still["verificationStatus"] == "PENDING_MANUAL_REVIEW"

    @pytest.mark.parametrize("decision", ["MAYBE", "PENDING_MANUAL_REVIEW", "approved", 1, None])
    async def test_a_decision_other_than_approved_or_rejected_is_refused(
        self, client, auth, runner, decision
    ):
        waiting = await _awaiting_review(client, auth, runner)
        refused = await _decide(client, auth, waiting["id"], {"decision": decision})
        assert set(bad_fields(assert_error(refused, 400, "INVALID_INPUT"))) == {"decision"}

    async def test_unknown_fields_are_refused_by_name(self, client, auth, runner):
        waiting = await _awaiting_review(client, auth, runner)
        refused = await _decide(client, auth, waiting["id"], {"decision": "APPROVED", "approver": "me"})
        assert "approver" in bad_fields(assert_error(refused, 400, "INVALID_INPUT"))

    @pytest.mark.parametrize("permissions", [["VIEW"], ["TRANSACT"]])
    async def test_only_a_manage_token_decides(self, client, auth, runner, permissions):
        waiting = await _awaiting_review(client, auth, runner)
        token = (
            await client.post("/tokens", auth=auth, json={"name": "ro", "permissions": permissions})
        ).json()
        refused = await _decide(
            client, (token["clientId"], token["clientSecret"]), waiting["id"], {"decision": "APPROVED"}
        )
        assert_error(refused, 403, "FORBIDDEN")
        assert await _kyc_status(client, auth, waiting["customerId"]) == "PENDING"

    async def test_deciding_twice_is_a_conflict_naming_the_status_and_emits_once(
        self, client, auth, runner, receiver
    ):
        await _hooked(client, auth, receiver)
        waiting = await _awaiting_review(client, auth, runner)
        first = await _decide(client, auth, waiting["id"], {"decision": "APPROVED"})
        assert first.status_code == 200, first.text
        second = await _decide(client, auth, waiting["id"], {"decision": "REJECTED", "reason": "second tab"})
        refused = assert_error(second, 409, "VERIFICATION_NOT_AWAITING_REVIEW")
        assert refused["details"] == {"verificationId": waiting["id"], "verificationStatus": "APPROVED"}
        assert "APPROVED" in refused["message"]
        assert (await client.get(f"/verifications/{waiting['id']}", auth=auth)).json() == first.json()
        types = await _delivered(runner, receiver)
        assert sorted(t for t in types if t in VERIFICATION_EVENTS + CUSTOMER_EVENTS) == [
            "CUSTOMER.KYC_APPROVED",
            "VERIFICATION.APPROVED",
        ]

    async def test_a_verification_not_left_to_a_person_is_a_conflict(self, client, auth):
        person = await create(client, auth, PERSON)
        missing = await verify(client, auth, person["id"])  # RESOLVE_ERRORS: nothing to decide
        refused = assert_error(
            await _decide(client, auth, missing["id"], {"decision": "APPROVED"}),
            409,
            "VERIFICATION_NOT_AWAITING_REVIEW",
        )
        assert refused["details"]["verificationStatus"] == "RESOLVE_ERRORS"

    async def test_another_platform_s_verification_is_the_unknown_id_s_404(
        self, client, auth, db, settings, runner
    ):
        waiting = await _awaiting_review(client, auth, runner)
        other = (await create_platform(db, settings))["sandbox"]
        unknown_id = waiting["id"][:-12] + "0" * 12
        theirs = await _decide(client, other, waiting["id"], {"decision": "APPROVED"})
        unknown = await _decide(client, other, unknown_id, {"decision": "APPROVED"})
        looked_up = await client.get(f"/verifications/{unknown_id}", auth=other)
        for answer in (theirs, unknown, looked_up):
            assert_error(answer, 404, "REFERENCE_NOT_FOUND")
        assert theirs.text.replace(waiting["id"], "ID") == unknown.text.replace(unknown_id, "ID")
        assert unknown.text == looked_up.text
        assert await _kyc_status(client, auth, waiting["customerId"]) == "PENDING"


class TestIdempotencyAndRaces:
    async def test_a_replay_answers_the_same_and_changes_nothing(self, client, auth, runner, receiver):
        await _hooked(client, auth, receiver)
        waiting = await _awaiting_review(client, auth, runner)
        body = {"decision": "REJECTED", "reason": "sanctions hit"}
        first = await _decide(client, auth, waiting["id"], body, **{"Idempotency-Key": "decide-1"})
        again = await _decide(client, auth, waiting["id"], body, **{"Idempotency-Key": "decide-1"})
        assert first.status_code == again.status_code == 200, again.text
        assert again.content == first.content
        types = await _delivered(runner, receiver)
        assert types.count("VERIFICATION.REJECTED") == 1 and types.count("CUSTOMER.KYC_REJECTED") == 1
        # a refused request's answer is the key's too
        other = await _decide(
            client, auth, waiting["id"], {"decision": "APPROVED"}, **{"Idempotency-Key": "decide-2"}
        )
        replayed = await _decide(
            client, auth, waiting["id"], {"decision": "APPROVED"}, **{"Idempotency-Key": "decide-2"}
        )
        assert other.status_code == replayed.status_code == 409 and other.content == replayed.content

    async def test_two_decisions_at_once_apply_one(self, client, auth, runner, receiver, backend):
        if backend != "postgresql":
            pytest.skip("real concurrency needs PostgreSQL (SQLite serializes every write)")
        await _hooked(client, auth, receiver)
        waiting = await _awaiting_review(client, auth, runner)
        answers = await asyncio.gather(
            _decide(client, auth, waiting["id"], {"decision": "APPROVED"}),
            _decide(client, auth, waiting["id"], {"decision": "REJECTED", "reason": "other tab"}),
        )
        assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
        [won] = [a.json() for a in answers if a.status_code == 200]
        [lost] = [a.json() for a in answers if a.status_code == 409]
        assert lost["code"] == "VERIFICATION_NOT_AWAITING_REVIEW"
        assert lost["details"]["verificationStatus"] == won["verificationStatus"]
        assert (await client.get(f"/verifications/{waiting['id']}", auth=auth)).json() == won
        types = await _delivered(runner, receiver)
        decided = sorted(t for t in types if t in VERIFICATION_EVENTS + CUSTOMER_EVENTS)
        status = won["verificationStatus"]
        assert decided == [f"CUSTOMER.KYC_{status}", f"VERIFICATION.{status}"]


class TestLockOrder:
    async def test_the_provider_review_locks_the_customer_before_the_verification(
        self, client, auth, runner, backend, db
    ) -> None:
        """Every writer of a verification's outcome locks the customer first (decide, the sandbox's
        override), so the provider's review must too: holding the verification while it waits for the
        customer would deadlock with a person's decision taken at that moment. Here the customer is locked
        by another transaction; the review waits for it without holding the verification."""
        if backend != "postgresql":
            pytest.skip("row locks need PostgreSQL (SQLite serializes every write)")
        person = await create(client, auth, PERSON)  # approved by the sandbox provider: the customer moves
        await uploaded(client, auth, person["id"], "PASSPORT", png())
        await uploaded(client, auth, person["id"], "UTILITY_BILL")
        submitted = await verify(client, auth, person["id"])
        assert submitted["verificationStatus"] == "IN_PROGRESS"
        async with db.engine.connect() as holder, db.engine.connect() as prober:
            await holder.execute(text("BEGIN"))
            await holder.execute(
                text("SELECT id FROM customers WHERE id = :id FOR UPDATE"), {"id": person["id"]}
            )
            review = asyncio.create_task(runner.run_until_idle(timeout=20))
            await asyncio.sleep(1.0)  # the review job runs and waits for the customer's lock
            assert not review.done()
            await prober.execute(text("BEGIN"))
            locked = await prober.execute(
                text("SELECT id FROM verifications WHERE id = :id FOR UPDATE NOWAIT"), {"id": submitted["id"]}
            )
            assert locked.scalar_one() == submitted["id"]  # not held by the waiting review
            await prober.execute(text("ROLLBACK"))
            await holder.execute(text("ROLLBACK"))
            await review
        found = (await client.get(f"/verifications/{submitted['id']}", auth=auth)).json()
        assert found["verificationStatus"] == "APPROVED"
        assert await _kyc_status(client, auth, person["id"]) == "APPROVED"
