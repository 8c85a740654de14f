"""The client scenario, written against the Python client openapi-python-client generated from platpay's
live /openapi.json (package `platpay_client`, on PYTHONPATH): run by tests/e2e/test_generated_clients.py,
the same steps as tests/clients/ts/scenario.ts. Typed models in, typed models out: the names are the
reference's (IndividualCustomerCreateRequest, TransferOutRequest, QuoteRequest, OutgoingTransaction,
Error404, ...). Usage: python scenario.py BASE_URL CLIENT_ID CLIENT_SECRET CLABE"""

from __future__ import annotations

import base64
import json
import secrets
import sys
from typing import Any

from platpay_client import AuthenticatedClient
from platpay_client.api.cross_currency_transfers import create_quote, execute_quote
from platpay_client.api.customers import create_customer, get_customer_by_id, list_customers
from platpay_client.api.external_accounts import create_customer_external_account
from platpay_client.api.internal_accounts import list_customer_internal_accounts
from platpay_client.api.same_currency_transfers import create_transfer_out
from platpay_client.api.sandbox import sandbox_fund_internal_account
from platpay_client.api.transactions import list_transactions
from platpay_client.models import (
    AccountDestination,
    AccountDestinationDestinationType,
    AccountQuoteSource,
    AccountQuoteSourceSourceType,
    Address,
    CustomerListResponse,
    Error404,
    ExternalAccount,
    ExternalAccountCreateRequest,
    ExternalAccountCreateRequestAccountInfo,
    ExternalAccountDestinationReference,
    IndividualCustomer,
    IndividualCustomerCreateRequest,
    IndividualCustomerCreateRequestCustomerType,
    InternalAccount,
    InternalAccountListResponse,
    InternalAccountReference,
    OutgoingTransaction,
    Quote,
    QuoteLockSide,
    QuoteRequest,
    SandboxFundRequest,
    TransactionListResponse,
    TransferOutRequest,
)


def check(condition: object, message: str) -> None:
    if not condition:
        raise SystemExit(f"scenario failed: {message}")


def parsed(value: Any, model: type) -> Any:
    """The typed answer the client parsed, which must be `model` (else it parsed an error)."""
    check(isinstance(value, model), f"expected a {model.__name__}, got {value!r}")
    return value


def main(base_url: str, client_id: str, client_secret: str, clabe: str) -> None:
    token = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
    client = AuthenticatedClient(base_url=base_url, token=token, prefix="Basic")
    run = secrets.token_hex(4)

    def new_customer(suffix: str) -> IndividualCustomer:
        body = IndividualCustomerCreateRequest(
            customer_type=IndividualCustomerCreateRequestCustomerType.INDIVIDUAL,
            platform_customer_id=f"py-{run}-{suffix}",
            currencies=["USD", "MXN"],
            full_name="Jane Doe",
            birth_date="1990-04-12",
            address=Address(line1="1 Main St", postal_code="62701", country="US"),
        )
        response = create_customer.sync_detailed(client=client, body=body)
        check(response.status_code == 201, f"createCustomer: {response.status_code} {response.content!r}")
        return parsed(response.parsed, IndividualCustomer)

    jane = new_customer("a")
    john = new_customer("b")

    first = parsed(list_customers.sync(client=client, limit=1), CustomerListResponse)
    check(first.has_more and first.next_cursor, "the first page of one says there is more")
    second = parsed(
        list_customers.sync(client=client, limit=1, cursor=first.next_cursor), CustomerListResponse
    )
    check(second.data[0].id != first.data[0].id, "the next page is another customer")
    check(first.data[0].id == john.id, "newest first")

    accounts = list_customer_internal_accounts.sync(client=client, customer_id=jane.id, currency="USD")
    usd = parsed(accounts, InternalAccountListResponse).data[0]
    funded = sandbox_fund_internal_account.sync(
        usd.id, client=client, body=SandboxFundRequest(amount=100_000)
    )
    check(parsed(funded, InternalAccount).balance.amount == 100_000, f"funded: {funded!r}")

    def external_account(currency: str, info: dict[str, Any]) -> str:
        body = ExternalAccountCreateRequest(
            customer_id=jane.id,
            currency=currency,
            account_info=ExternalAccountCreateRequestAccountInfo.from_dict(info),
        )
        response = create_customer_external_account.sync_detailed(client=client, body=body)
        check(response.status_code == 201, f"createCustomerExternalAccount: {response.content!r}")
        return parsed(response.parsed, ExternalAccount).id

    bank = external_account(
        "USD",
        {
            "accountType": "USD_ACCOUNT",
            "accountNumber": "123456789",
            "routingNumber": "011000015",
            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
        },
    )
    transfer_body = TransferOutRequest(
        source=InternalAccountReference(account_id=usd.id),
        destination=ExternalAccountDestinationReference(account_id=bank),
        amount=2_500,
    )
    key = f"py-transfer-{run}"
    transfer = create_transfer_out.sync_detailed(client=client, body=transfer_body, idempotency_key=key)
    check(transfer.status_code == 201, f"createTransferOut: {transfer.content!r}")
    sent = parsed(transfer.parsed, OutgoingTransaction)
    replay = create_transfer_out.sync(client=client, body=transfer_body, idempotency_key=key)
    check(
        parsed(replay, OutgoingTransaction).id == sent.id,
        "the same Idempotency-Key replays the first transfer",
    )

    clabe_account = external_account(
        "MXN",
        {
            "accountType": "MXN_ACCOUNT",
            "clabeNumber": clabe,
            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Juan Pérez"},
        },
    )
    quote_body = QuoteRequest(
        source=AccountQuoteSource(source_type=AccountQuoteSourceSourceType.ACCOUNT, account_id=usd.id),
        destination=AccountDestination(
            destination_type=AccountDestinationDestinationType.ACCOUNT, account_id=clabe_account
        ),
        locked_currency_side=QuoteLockSide.SENDING,
        locked_currency_amount=10_000,
    )
    quote = parsed(create_quote.sync(client=client, body=quote_body), Quote)
    check(quote.status == "PENDING", f"createQuote: {quote!r}")
    executed = execute_quote.sync(quote.id, client=client, idempotency_key=f"py-execute-{run}")
    check(parsed(executed, Quote).status != "PENDING", f"executeQuote: {executed!r}")

    transactions = list_transactions.sync(client=client, customer_id=jane.id, limit=100)
    ids = {transaction.id for transaction in parsed(transactions, TransactionListResponse).data}
    check(sent.id in ids and quote.transaction_id in ids, "both payments are listed")

    missing = get_customer_by_id.sync_detailed("Customer:00000000-0000-7000-8000-000000000000", client=client)
    check(missing.status_code == 404, f"an unknown customer: {missing.status_code}")
    check(parsed(missing.parsed, Error404).code == "USER_NOT_FOUND", f"a 404's code: {missing.parsed!r}")
    print(json.dumps({"scenario": "ok", "customer": jane.id, "transfer": sent.id}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
