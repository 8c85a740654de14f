"""Incoming UMA payments arriving in the sandbox: POST /sandbox/uma/receive (the lifecycle after that is
in incoming/service.py).

The sender must be a sandbox counterparty (payments/uma.py) and the receiver one of the tenant's customers,
able to receive the currency: the customer's defaultUmaDepositAccount when that external account is in the
currency, else its internal account in it. What the sender sends about itself (counterpartyInformation) is
what the platform's requiredCounterpartyFields ask for, from the sandbox sender's profile; what it asks
about the receiver (requestedReceiverCustomerInfoFields) is the provider's counterparty requirement for the
currency less what the customer's registration already holds.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.external import service as external_service
from platpay.accounts.state import InternalAccountStatus
from platpay.accounts.validators import corridors
from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.customers.errors import CustomerNotFound
from platpay.errors import InvalidCurrency, InvalidInput, invalid_field
from platpay.events import service as events_service
from platpay.kit import clock, currencies
from platpay.kit.ids import new_id
from platpay.payments import providers, sandbox, uma
from platpay.payments import service as payments_service
from platpay.payments.errors import UmaNotFound
from platpay.payments.incoming import service as incoming
from platpay.payments.providers import Counterparty
from platpay.payments.schemas import Transaction
from platpay.payments.state import ApprovalState, ApprovalTrigger, TransactionStatus, TransactionType
from platpay.payments.transfers import check_amount
from platpay.payments.types import TransactionDestination
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

# The sandbox senders' own details, offered as counterpartyInformation where the platform asks for them.
_SENDER_COUNTRY = {"USD": "US", "EUR": "DE", "MXN": "MX", "GBP": "GB", "BRL": "BR", "INR": "IN", "CAD": "CA"}
_MICROSECOND = timedelta(microseconds=1)  # the approval_*_us columns' unit


async def _receiver(
    session: AsyncSession, *, tenant: TenantContext, customer_id: str | None, receiver_uma_address: str | None
) -> str:
    """The id of the customer being paid (named, or the owner of the receiver's UMA address)."""
    if customer_id is not None:
        row = await customers_service.load(session, tenant_id=tenant.id, customer_id=customer_id)
        if row.deleted_at is not None:  # a deleted customer receives nothing: as if there were none
            raise CustomerNotFound(customer_id)
        return row.id
    assert receiver_uma_address is not None
    found = await uma.resolve(
        session, tenant=tenant, address=receiver_uma_address, field="receiverUmaAddress"
    )
    if found.customer_id is None:
        raise UmaNotFound(
            f"{found.address} is not one of your customers' UMA addresses",
            details={"receiverUmaAddress": found.address},
        )
    return found.customer_id


def _currency_entry(tenant: TenantContext, currency: str) -> dict[str, Any]:
    entry = next((c for c in tenant.supported_currencies if c["currencyCode"] == currency), None)
    if entry is None:
        raise invalid_field(
            "receivingCurrencyCode",
            f"{currency} is not among this platform's supportedCurrencies ({', '.join(tenant.currency_codes)})",
            error=InvalidCurrency,
        )
    if TransactionType.INCOMING not in entry["enabledTransactionTypes"]:
        raise invalid_field(
            "receivingCurrencyCode",
            f"incoming payments are not enabled for {currency} (see enabledTransactionTypes in GET /config)",
            error=InvalidCurrency,
        )
    return entry


async def _destination(
    session: AsyncSession, *, tenant: TenantContext, customer_id: str, currency: str, field: str
) -> tuple[TransactionDestination, str | None, str | None]:
    """Where the money lands: the customer's defaultUmaDepositAccount when it is in this currency (returns
    its payout rail too, and how paying it out ends: the rail's payout outcome for the account), else the
    customer's holding account in the currency (never the embedded wallet)."""
    deposit = await external_service.default_uma_deposit_account(
        session, tenant_id=tenant.id, customer_id=customer_id
    )
    if (
        deposit is not None
        and deposit.status == InternalAccountStatus.ACTIVE
        and deposit.currency == currency
    ):
        rails = corridors.payment_rails(deposit.account_type)
        rail = rails[0] if rails else deposit.account_type
        offramp = providers.rail_for(tenant).payout_outcome(
            corridors.primary_identifier(deposit.account_info)
        )
        return {"destinationType": "ACCOUNT", "accountId": deposit.id, "currency": currency}, rail, offramp
    account = await accounts_service.holding_account_in(
        session, tenant_id=tenant.id, customer_id=customer_id, currency=currency
    )
    if account is None:
        raise invalid_field(
            "receivingCurrencyCode",
            f"customer {customer_id} has no {currency} account to receive into",
            error=InvalidCurrency,
        )
    if account.status != InternalAccountStatus.ACTIVE:
        raise invalid_field(field, f"the customer's {currency} account {account.id} is {account.status}")
    return {"destinationType": "ACCOUNT", "accountId": account.id, "currency": currency}, None, None


def _sender_information(sender: Counterparty, wanted: list[str]) -> dict[str, str]:
    country = _SENDER_COUNTRY.get(sender.currencies[0], "US")
    username = sender.address[1:].split("@", 1)[0]
    profile = {
        "FULL_NAME": sender.display_name,
        "BIRTH_DATE": "1985-06-15",
        "NATIONALITY": country,
        "COUNTRY_OF_RESIDENCE": country,
        "EMAIL": f"{username}@sandbox.uma.money",
        "PHONE_NUMBER": "+15555550100",
        "USER_TYPE": "INDIVIDUAL",
        "ACCOUNT_IDENTIFIER": sender.address,
    }
    return {name: profile[name] for name in wanted if name in profile}


def requested_receiver_fields(names: list[str], on_file: set[str]) -> list[dict[str, Any]]:
    """What the sender's side asks about the receiver: the counterparty information the provider requires
    for the currency (`names`), less what the customer's registration already supplies (all mandatory)."""
    return [{"name": name, "mandatory": True} for name in names if name not in on_file]


async def receive(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    sender_uma_address: str,
    receiving_currency_code: str,
    receiving_currency_amount: int,
    receiver_uma_address: str | None = None,
    customer_id: str | None = None,
    settings: Settings,
) -> Transaction:
    """A sandbox sender pays one of the tenant's customers (named by exactly one of `receiver_uma_address`
    and `customer_id`); the platform is asked to approve it."""
    sender_address, _, _ = uma.normalize(sender_uma_address, field="senderUmaAddress")
    if (receiver_uma_address is None) == (customer_id is None):
        message = "give exactly one of receiverUmaAddress and customerId"
        raise InvalidInput(
            message,
            details={
                "fields": [
                    {"field": "receiverUmaAddress", "message": message},
                    {"field": "customerId", "message": message},
                ]
            },
        )
    sender = sandbox.sandbox_counterparty(sender_address)
    if sender is None:
        raise UmaNotFound(
            f"no sandbox sender at {sender_address}: use $success.<ccy>, $pending.long.<ccy> or "
            f"$fail.compliance.<ccy> @{sandbox.SANDBOX_DOMAINS[0]}",
            details={"senderUmaAddress": sender_address},
        )
    receiver_field = "customerId" if customer_id is not None else "receiverUmaAddress"
    receiver_id = await _receiver(
        session, tenant=tenant, customer_id=customer_id, receiver_uma_address=receiver_uma_address
    )
    currency = currencies.require(receiving_currency_code, field="receivingCurrencyCode").code
    entry = _currency_entry(tenant, currency)
    destination, payout_rail, offramp = await _destination(
        session, tenant=tenant, customer_id=receiver_id, currency=currency, field=receiver_field
    )
    customer = await customers_service.ensure_can_move_money(
        session, tenant_id=tenant.id, customer_id=receiver_id, currency=currency, receiving=True
    )
    check_amount(tenant, currency=currency, amount=receiving_currency_amount, field="receivingCurrencyAmount")

    now = clock.now()
    has_endpoint = await tenants_service.webhook_endpoint(session, tenant_id=tenant.id) is not None
    timeout = timedelta(seconds=settings.incoming_approval_timeout_seconds)
    arrival_delay = timedelta(seconds=settings.sandbox_uma_long_pending_seconds)
    transaction_id = new_id("Transaction")
    names = tenants_service.provider_requirements(currency)["counterparty"]
    requested = requested_receiver_fields(names, customers_service.info_fields_on_file(customer, names))
    row = await payments_service.create_transaction(
        session,
        transaction_id=transaction_id,
        tenant_id=tenant.id,
        type=TransactionType.INCOMING,
        kind=incoming.UMA_INCOMING,
        status=TransactionStatus.PENDING,
        customer_id=customer.id,
        platform_customer_id=customer.platform_customer_id,
        source={"sourceType": "UMA_ADDRESS", "umaAddress": sender.address, "currency": sender.currencies[0]},
        destination=destination,
        sender_account_id=sender.address,
        receiver_account_id=destination["accountId"],
        received_amount=receiving_currency_amount,
        received_currency=currency,
        fee_amount=0,
        rail=incoming.UMA_RAIL,
        reference=f"UMA-{transaction_id[-12:].upper()}",
        outcome=sender.behaviour,
        extra={
            "counterpartyInformation": _sender_information(
                sender, [f["name"] for f in entry["requiredCounterpartyFields"]]
            ),
            "requestedReceiverCustomerInfoFields": requested,
            "receiverUmaAddress": customer.uma_address,
            "payoutRail": payout_rail,
            **({"offrampOutcome": offramp} if offramp in incoming.OFFRAMP_FAILURES else {}),
        },
        approval_state=ApprovalState.AWAITING_REPLY if has_endpoint else ApprovalState.AWAITING_DECISION,
        # nobody can be asked without an endpoint: the platform must decide through the API in time
        approval_deadline=None if has_endpoint else now + timeout,
        approval_timeout_us=timeout // _MICROSECOND,
        approval_arrival_delay_us=arrival_delay // _MICROSECOND,
        at=now,
    )
    if sender.behaviour == providers.COMPLIANCE_FAILURE:
        incoming.transition(row, ApprovalTrigger.FAIL, decided_by="COMPLIANCE")
        return await payments_service.move(
            session,
            row,
            TransactionStatus.FAILED,
            platform_id=tenant.platform_id,
            failure_reason=incoming.PAY_REQUEST_FAILED,
            failure_details={
                "code": "COUNTERPARTY_NOT_ALLOWED",
                "message": f"the sender {sender.address} failed compliance screening",
            },
        )
    await session.flush()
    transaction = payments_service.to_schema(row, platform_id=tenant.platform_id)
    await events_service.emit(
        session,
        tenant_id=tenant.id,
        type=incoming.PENDING_EVENT,
        resource={
            **transaction.to_api(),
            "requestedReceiverCustomerInfoFields": row.extra["requestedReceiverCustomerInfoFields"],
        },
    )
    if not has_endpoint:
        await incoming.schedule(session, row, "deadline", at=now + timeout)
    return transaction
