"""The transfer path's one read (accounts' lean statement with the owner's columns from customers' service):
the same rows, value for value, as the ORM reads them one by one; the cases where a part is missing; and the
owner's checks it feeds."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import inspect

from platpay.accounts import service as accounts_service
from platpay.accounts.errors import InternalAccountNotFound
from platpay.accounts.external import service as external_service
from platpay.auth import service as auth_service
from platpay.customers import service as customers_service
from platpay.errors import ApiError
from platpay.payments import funding, transfers
from tests.factories import create_platform

BANK = {
    "accountType": "USD_ACCOUNT",
    "accountNumber": "123456789",
    "routingNumber": "011000015",
    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
}
DRAFT = {
    "customer_type": "INDIVIDUAL",
    "full_name": "Jane Doe",
    "birth_date": "1990-04-12",
    "email": "jane@example.com",
    "address": {"line1": "1 Main St", "postal_code": "62701", "country": "US"},
}


def _columns(row: Any) -> dict[str, Any]:
    return {attr.key: getattr(row, attr.key) for attr in inspect(type(row)).column_attrs}


async def _tenant(db, settings):
    client_id, secret = (await create_platform(db, settings))["sandbox"]
    async with db.read() as session:
        principal = await auth_service.authenticate(session, client_id=client_id, client_secret=secret)
    assert principal is not None
    return principal.tenant


async def _bank(session, tenant, customer_id):
    return await external_service.create_external_account(
        session,
        tenant=tenant,
        customer_id=customer_id,
        currency="USD",
        account_info=BANK,
        platform_account_id=None,
        default_uma_deposit_account=False,
    )


@pytest.fixture
async def parties(db, settings):
    tenant = await _tenant(db, settings)
    async with db.transaction() as session:
        person = await customers_service.create_customer(
            session, tenant=tenant, draft=DRAFT, settings=settings
        )
        usd = await accounts_service.holding_account_in(
            session, tenant_id=tenant.id, customer_id=person.id, currency="USD"
        )
        assert usd is not None
        await funding.fund_internal_account(session, tenant=tenant, account_id=usd.id, amount=10_000)
        bank = await _bank(session, tenant, person.id)
    return tenant, person, usd.id, bank.id


async def _read(db, tenant, internal_id, external_id):
    async with db.read() as session:
        return await accounts_service.get_internal_with_external(
            session, tenant_id=tenant.id, internal_id=internal_id, external_id=external_id
        )


class TestTheOneRead:
    async def test_reads_every_column_as_the_orm_does(self, db, parties):
        tenant, person, internal_id, external_id = parties
        internal, external, owner = await _read(db, tenant, internal_id, external_id)
        async with db.read() as session:
            orm_internal = await accounts_service.get_internal(
                session, tenant_id=tenant.id, account_id=internal_id
            )
            orm_external = await external_service.find(session, tenant_id=tenant.id, account_id=external_id)
            orm_owner = await customers_service.load(session, tenant_id=tenant.id, customer_id=person.id)
            assert orm_external is not None
            expected = (_columns(orm_internal), _columns(orm_external), _columns(orm_owner))
        assert (_columns(internal), _columns(external), _columns(owner)) == expected
        assert (
            owner.address["line1"] == "1 Main St" and owner.created_at.tzinfo is not None
        )  # JSON, aware UTC

    async def test_missing_parts(self, db, settings, parties):
        tenant, person, internal_id, external_id = parties
        with pytest.raises(InternalAccountNotFound):
            await _read(db, tenant, "InternalAccount:nope", external_id)
        internal, external, owner = await _read(db, tenant, internal_id, "ExternalAccount:nope")
        assert internal.id == internal_id and external is None and owner.id == person.id
        other = await _tenant(db, settings)  # another tenant's account ids are not found either
        with pytest.raises(InternalAccountNotFound):
            await _read(db, other, internal_id, external_id)
        async with db.transaction() as session:
            await external_service.delete_external_account(
                session, tenant_id=tenant.id, account_id=external_id, platform=False
            )
        assert (await _read(db, tenant, internal_id, external_id))[1] is None  # deleted: not live

    async def test_the_platforms_account_has_no_owner(self, db, parties):
        tenant, _, _, _ = parties
        async with db.transaction() as session:
            [platform_usd] = [
                a
                for a in await accounts_service.list_platform_accounts(session, tenant_id=tenant.id)
                if a.balance.currency.code == "USD"
            ]
            bank = await _bank(session, tenant, None)
        internal, external, owner = await _read(db, tenant, platform_usd.id, bank.id)
        assert internal.customer_id is None and external.id == bank.id and owner is None


class TestTheOwnerChecks:
    async def test_a_rejected_customer_cannot_send_and_nothing_changes(self, db, settings, parties):
        tenant, person, internal_id, external_id = parties
        async with db.transaction() as session:
            await customers_service.set_kyc_status(
                session, tenant_id=tenant.id, customer_id=person.id, status="REJECTED"
            )
        with pytest.raises(ApiError) as refused:
            async with db.transaction() as session:
                await transfers.transfer_out(
                    session,
                    tenant=tenant,
                    source_account_id=internal_id,
                    destination_account_id=external_id,
                    amount=100,
                    settings=settings,
                )
        assert (refused.value.status, refused.value.code) == (403, "USER_NOT_READY")
        async with db.read() as session:
            [account] = await accounts_service.render(
                session,
                [await accounts_service.get_internal(session, tenant_id=tenant.id, account_id=internal_id)],
            )
        assert account.balance.amount == 10_000 and account.total_balance.amount == 10_000

    async def test_an_approved_customer_sends(self, db, settings, parties):
        tenant, person, internal_id, external_id = parties
        async with db.transaction() as session:
            sent = await transfers.transfer_out(
                session,
                tenant=tenant,
                source_account_id=internal_id,
                destination_account_id=external_id,
                amount=100,
                settings=settings,
            )
        assert sent.status == "PENDING" and sent.platform_customer_id == person.platform_customer_id
