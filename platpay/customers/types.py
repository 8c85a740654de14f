"""A customer's fields as the customer services take them: plain values keyed by snake_case name, holding
only the fields given. Absent means "not given" (a PATCH keeps the value); a value of None means "given as
null" (which a PATCH refuses, naming the field). The services check every rule themselves and name the
API's fields (`businessInfo.taxId`) in their refusals."""

from __future__ import annotations

from datetime import date
from typing import TypedDict


class AddressDraft(TypedDict, total=False):
    line1: str | None
    line2: str | None
    city: str | None
    state: str | None
    postal_code: str | None
    country: str | None


class BusinessInfoDraft(TypedDict, total=False):
    legal_name: str | None
    tax_id: str | None
    incorporated_on: date | None
    registration_number: str | None
    doing_business_as: str | None
    country: str | None
    source_of_funds: str | None
    countries_of_operation: list[str] | None
    expected_recipient_jurisdictions: list[str] | None
    entity_type: str | None
    business_type: str | None
    purpose_of_account: str | None
    expected_monthly_transaction_count: str | None
    expected_monthly_transaction_volume: str | None


class CustomerDraft(TypedDict, total=False):
    """The fields of a customer to create (customer_type required) or the changes to one (customer_type
    required and unchanged)."""

    customer_type: str
    platform_customer_id: str | None
    uma_address: str | None
    email: str | None
    currencies: list[str] | None
    address: AddressDraft | None
    region: str | None
    full_name: str | None
    birth_date: str | None  # YYYY-MM-DD
    nationality: str | None
    business_info: BusinessInfoDraft | None
