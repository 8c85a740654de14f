"""Services are callable from anywhere: a job (or a test) moves money with plain keyword values inside its
own unit of work, exactly as the endpoints do, and the ledger holds."""

from __future__ import annotations

import pytest

from platpay.accounts import service as accounts_service
from platpay.accounts.external import service as external_service
from platpay.auth import service as auth_service
from platpay.customers import service as customers_service
from platpay.errors import ApiError
from platpay.ledger import service as ledger_service
from platpay.payments import funding, transfers
from platpay.payments.quotes import service as quotes_service
from platpay.payments.quotes.types import AccountDestination, AccountSource
from tests.factories import PERSON, clabe_ending, create_platform
from tests.support.fx import expected

BANK = {
    "accountType": "USD_ACCOUNT",
    "accountNumber": "123456789",
    "routingNumber": "011000015",
    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
}


@pytest.fixture
async def tenant(db, settings):
    client_id, secret = (await create_platform(db, settings))["sandbox"]
    async with db.read() as session:
        principal = await auth_service.authenticate(session, client_id=client_id, client_secret=secret)
    assert principal is not None
    return principal.tenant


@pytest.fixture
async def accounts(db, tenant, settings):
    """A customer with a funded USD account and two external accounts (USD, MXN), made through services."""
    async with db.transaction() as session:
        person = await customers_service.create_customer(
            session,
            tenant=tenant,
            draft={
                "customer_type": "INDIVIDUAL",
                "full_name": "Jane Doe",
                "birth_date": "1990-04-12",
                "email": "jane@example.com",
                "address": {"line1": "1 Main St", "postal_code": "62701", "country": "US"},
            },
            settings=settings,
        )
        usd = await accounts_service.holding_account_in(
            session, tenant_id=tenant.id, customer_id=person.id, currency="USD"
        )
        assert usd is not None
        await funding.fund_internal_account(session, tenant=tenant, account_id=usd.id, amount=100_000)
        bank = await external_service.create_external_account(
            session,
            tenant=tenant,
            customer_id=person.id,
            currency="USD",
            account_info=BANK,
            platform_account_id=None,
            default_uma_deposit_account=False,
        )
        mxn = await external_service.create_external_account(
            session,
            tenant=tenant,
            customer_id=person.id,
            currency="MXN",
            account_info={
                "accountType": "MXN_ACCOUNT",
                "clabeNumber": clabe_ending("011"),
                "beneficiary": PERSON,
            },
            platform_account_id=None,
            default_uma_deposit_account=False,
        )
    return {"usd": usd.id, "bank": bank.id, "mxn": mxn.id}


async def test_a_job_moves_money_with_plain_values(db, settings, tenant, accounts):
    async with db.transaction() as session:
        sent = await transfers.transfer_out(
            session,
            tenant=tenant,
            source_account_id=accounts["usd"],
            destination_account_id=accounts["bank"],
            amount=2_500,
            description="payout",
            settings=settings,
        )
        quote = await quotes_service.create_quote(
            session,
            tenant=tenant,
            source=AccountSource(account_id=accounts["usd"]),
            destination=AccountDestination(account_id=accounts["mxn"]),
            locked_currency_side="SENDING",
            locked_currency_amount=10_000,
            immediately_execute=True,
            settings=settings,
        )
    assert (sent.status, sent.sent_amount.amount, sent.description) == ("PENDING", 2_500, "payout")
    assert sent.destination["paymentRail"] == "ACH"
    want = expected("USD", "MXN", "SPEI", locked="SENDING", amount=10_000)
    assert (quote.status, quote.total_sending_amount, quote.total_receiving_amount) == (
        "PROCESSING",
        10_000,
        want["receiving"],
    )
    assert quote.source == {"sourceType": "ACCOUNT", "accountId": accounts["usd"]}
    assert quote.destination == {
        "destinationType": "ACCOUNT",
        "accountId": accounts["mxn"],
        "paymentRail": "SPEI",
    }

    async with db.read() as session:
        balance = (await ledger_service.balances(session, [accounts["usd"]]))[accounts["usd"]]
        hold = await ledger_service.entries_for(session, tenant_id=tenant.id, reference=sent.id)
        execution = await ledger_service.entries_for(
            session, tenant_id=tenant.id, reference=quote.transaction_id
        )
        report = await ledger_service.verify(session)
    assert (balance.available, balance.held) == (100_000 - 2_500 - 10_000, 2_500)
    assert [e["kind"] for e in hold] == ["TRANSFER_OUT_HOLD"]
    assert [e["kind"] for e in execution] == ["QUOTE_EXECUTE"]
    assert report.ok, "\n".join(report.lines())


async def test_refusals_name_the_api_fields_and_write_nothing(db, settings, tenant, accounts):
    with pytest.raises(ApiError) as refused:
        async with db.transaction() as session:
            await transfers.transfer_out(
                session,
                tenant=tenant,
                source_account_id=accounts["usd"],
                destination_account_id=accounts["mxn"],
                amount=2_500,
                settings=settings,
            )
    assert refused.value.status == 400
    assert [f["field"] for f in refused.value.details["fields"]] == ["destination.accountId"]
    async with db.read() as session:
        balance = (await ledger_service.balances(session, [accounts["usd"]]))[accounts["usd"]]
    assert (balance.available, balance.held) == (100_000, 0)
