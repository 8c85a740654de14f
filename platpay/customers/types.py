"""A customer's fields as the customer services take them: plain values keyed by snake_case name, holding
only the fields given. Absent means "not given" (a PATCH keeps the value); a value of None means "given as
null" (which a PATCH refuses, naming the field). The services check every rule themselves and name the
API's fields (`businessInfo.taxId`) in their refusals."""

from __future__ import annotations

from datetime import date, datetime
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
    naics_code: str | None
    source_of_funds_categories: list[str] | None
    source_of_funds_other_description: str | None
    purpose_of_account_other_description: str | None
    expected_counterparty_countries: list[str] | None
    primary_contact_first_name: str | None
    primary_contact_last_name: str | None


class EndUserTermsConsentDraft(TypedDict):
    """A customer's acceptance of the End User Terms (EndUserTermsConsentRequest: every field required)."""

    accepted_at: datetime
    ip_address: str
    terms_version: str
    acceptance_method: str


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
    phone_number: str | None
    end_user_terms_consent: EndUserTermsConsentDraft | None
    # an individual's identification: idType SSN or ITIN with its number (write-only), countryOfIssuance US
    id_type: str | None
    identifier: str | None
    country_of_issuance: str | None
    # an individual's enhanced-due-diligence answers (CustomerEdd), stored together (DUE_DILIGENCE_FIELDS)
    source_of_funds_categories: list[str] | None
    source_of_funds_other_description: str | None
    source_of_wealth_categories: list[str] | None
    source_of_wealth_other_description: str | None
    purpose_of_account: str | None
    purpose_of_account_other_description: str | None
    expected_monthly_transaction_count: str | None
    expected_monthly_transaction_volume: str | None
    annual_income_range: str | None
    net_worth_range: str | None
    pep_status: str | None
