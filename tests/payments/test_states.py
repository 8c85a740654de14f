"""payments/state.py: the transaction lifecycles (INTERFACE-FACTS §8) and the incoming approval, as tables,
and enforced by the real service: a status change the lifecycle does not allow raises."""

from __future__ import annotations

from datetime import timedelta
from typing import get_args

import pytest
from sqlalchemy import select

from platpay.kit import clock
from platpay.kit.states import IllegalTransition
from platpay.payments import schemas
from platpay.payments import service as payments_service
from platpay.payments.incoming import service as incoming
from platpay.payments.models import TransactionRow
from platpay.payments.state import (
    APPROVAL,
    INCOMING,
    OUTGOING,
    REFUND,
    ApprovalState,
    ApprovalTrigger,
    RefundStatus,
    TransactionStatus,
    lifecycle,
)
from platpay.tenants import service as tenants_service
from tests.factories import customer, external_account, fund, internal_account

S, A = TransactionStatus, ApprovalState


class TestTables:
    def test_statuses_are_values_of_the_api_enum(self):
        assert set(TransactionStatus) <= set(get_args(schemas.TransactionStatus.__value__))

    def test_outgoing(self):
        assert OUTGOING.reachable() == OUTGOING.states == set(TransactionStatus)
        assert OUTGOING.terminal == {S.FAILED, S.EXPIRED}
        assert OUTGOING.targets(S.PENDING) == {S.PROCESSING, S.FAILED, S.EXPIRED}
        assert OUTGOING.targets(S.PROCESSING) == {S.COMPLETED, S.FAILED}
        assert OUTGOING.targets(S.COMPLETED) == {S.FAILED}  # a bank return, and nothing else

    def test_incoming(self):
        assert INCOMING.reachable() == INCOMING.states == {S.PENDING, S.COMPLETED, S.FAILED}
        assert INCOMING.terminal == {S.COMPLETED, S.FAILED}  # no PROCESSING, no bank return
        assert INCOMING.initial == {S.PENDING, S.COMPLETED}  # a payment between a platform's own parties

    def test_the_direction_picks_the_lifecycle(self):
        assert lifecycle("OUTGOING") is OUTGOING and lifecycle("INCOMING") is INCOMING

    def test_approval(self):
        assert APPROVAL.reachable() == APPROVAL.states == set(ApprovalState)
        assert APPROVAL.terminal == {A.DONE}
        assert {trigger for _, trigger in APPROVAL.triggers} == set(ApprovalTrigger)
        # a payment is decided once: nothing decides an approved or done one again
        for trigger in (ApprovalTrigger.APPROVE, ApprovalTrigger.REJECT, ApprovalTrigger.DEFER):
            for state in (A.APPROVED, A.DONE):
                with pytest.raises(IllegalTransition):
                    APPROVAL.fire(state, trigger)
        assert APPROVAL.fire(A.AWAITING_REPLY, ApprovalTrigger.DEFER) is A.AWAITING_DECISION
        with pytest.raises(IllegalTransition):
            APPROVAL.fire(A.AWAITING_REPLY, ApprovalTrigger.TIME_OUT)  # no deadline before the 202


async def _row(db, transaction_id: str) -> TransactionRow:
    async with db.read() as session:
        row = await session.scalar(select(TransactionRow).where(TransactionRow.id == transaction_id))
        assert row is not None
        return row


async def _move(db, transaction_id: str, status: TransactionStatus) -> None:
    async with db.transaction() as session:
        row = await session.scalar(select(TransactionRow).where(TransactionRow.id == transaction_id))
        assert row is not None
        platform_id = await tenants_service.platform_of(session, tenant_id=row.tenant_id)
        await payments_service.move(session, row, status, platform_id=platform_id)


class TestTheServiceEnforcesIt:
    async def test_a_completed_transfer_out_cannot_move_back(self, client, auth, runner, db):
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], 1_000)
        bank = await external_account(client, auth, person["id"])
        body = {"source": {"accountId": account["id"]}, "destination": {"accountId": bank["id"]}}
        tx = (await client.post("/transfer-out", auth=auth, json={**body, "amount": 400})).json()
        await runner.run_until_idle()
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        before = await client.get(f"/transactions/{tx['id']}", auth=auth)
        assert before.json()["status"] == "COMPLETED"
        for status in (S.PENDING, S.PROCESSING, S.EXPIRED, S.COMPLETED):
            with pytest.raises(IllegalTransition, match=f"outgoing transaction {tx['id']}: no move from"):
                await _move(db, tx["id"], status)
        after = await client.get(f"/transactions/{tx['id']}", auth=auth)
        assert after.content == before.content  # nothing changed, no event

    async def test_a_pending_transfer_out_cannot_skip_processing(self, client, auth, db):
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], 1_000)
        bank = await external_account(client, auth, person["id"])
        body = {"source": {"accountId": account["id"]}, "destination": {"accountId": bank["id"]}}
        tx = (await client.post("/transfer-out", auth=auth, json={**body, "amount": 400})).json()
        with pytest.raises(IllegalTransition):
            await _move(db, tx["id"], S.COMPLETED)
        assert (await _row(db, tx["id"])).status == "PENDING"

    async def test_a_failed_incoming_payment_is_final(self, client, auth, db):
        person = await customer(client, auth)
        body = {
            "senderUmaAddress": "$success.usd@sandbox.uma.money",
            "receivingCurrencyCode": "USD",
            "receivingCurrencyAmount": 500,
            "customerId": person["id"],
        }
        tx = (await client.post("/sandbox/uma/receive", auth=auth, json=body)).json()
        rejected = await client.post(f"/transactions/{tx['id']}/reject", auth=auth)
        assert rejected.json()["status"] == "FAILED"
        for status in TransactionStatus:
            with pytest.raises(IllegalTransition, match="incoming transaction"):
                await _move(db, tx["id"], status)


class TestApprovalColumns:
    async def test_the_approval_lives_in_columns_and_moves_by_the_table(self, client, auth, db, settings):
        person = await customer(client, auth)
        body = {
            "senderUmaAddress": "$success.usd@sandbox.uma.money",
            "receivingCurrencyCode": "USD",
            "receivingCurrencyAmount": 500,
            "customerId": person["id"],
        }
        tx = (await client.post("/sandbox/uma/receive", auth=auth, json=body)).json()
        row = await _row(db, tx["id"])
        assert "approval" not in row.extra
        assert row.approval_state == A.AWAITING_DECISION  # no webhook endpoint: the API decides
        assert row.approval_deadline == row.created_at + timedelta(
            seconds=settings.incoming_approval_timeout_seconds
        )
        assert timedelta(microseconds=row.approval_timeout_us) == timedelta(
            seconds=settings.incoming_approval_timeout_seconds
        )
        assert timedelta(microseconds=row.approval_arrival_delay_us) == timedelta(
            seconds=settings.sandbox_uma_long_pending_seconds
        )
        assert row.approval_decided_at is None and row.approval_decided_by is None

        async with db.transaction() as session:
            locked = await session.scalar(select(TransactionRow).where(TransactionRow.id == tx["id"]))
            assert locked is not None
            with pytest.raises(IllegalTransition, match="no move from AWAITING_DECISION on ARRIVE"):
                incoming.transition(locked, ApprovalTrigger.ARRIVE)
            assert locked.approval_state == A.AWAITING_DECISION

        await client.post(f"/transactions/{tx['id']}/reject", auth=auth)
        row = await _row(db, tx["id"])
        assert (row.approval_state, row.approval_decided_by) == (A.DONE, "API")
        assert row.approval_decided_at is not None


def test_a_refund_settles_once():
    assert REFUND.reachable() == set(RefundStatus)
    assert REFUND.terminal == {RefundStatus.COMPLETED, RefundStatus.FAILED}
    with pytest.raises(IllegalTransition):
        REFUND.move(RefundStatus.FAILED, RefundStatus.COMPLETED, subject="Transaction:x")
