"""The customer bodies are validated flat but documented as the reference's oneOf by customerType: the
documented variants must be exactly the flat body split by type, so that what the document promises and
what the server accepts are the same fields, with the same names and rules."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from platpay.customers import drafts
from platpay.customers.schemas import (
    BusinessCustomerCreateRequest,
    BusinessCustomerUpdateRequest,
    CustomerCreateRequestOneOf,
    CustomerUpdateRequestOneOf,
    IndividualCustomerCreateRequest,
    IndividualCustomerUpdateRequest,
)

BODIES = [
    (CustomerCreateRequestOneOf, IndividualCustomerCreateRequest, BusinessCustomerCreateRequest),
    (CustomerUpdateRequestOneOf, IndividualCustomerUpdateRequest, BusinessCustomerUpdateRequest),
]


def _aliases(model: type[BaseModel]) -> dict[str, str | None]:
    return {name: field.alias for name, field in model.model_fields.items()}


@pytest.mark.parametrize(("flat", "individual", "business"), BODIES, ids=["create", "update"])
def test_the_documented_variants_are_the_flat_body_split_by_type(flat, individual, business) -> None:
    assert set(flat.model_fields) == set(individual.model_fields) | set(business.model_fields)
    for variant in (individual, business):
        for name, alias in _aliases(variant).items():
            assert _aliases(flat)[name] == alias, f"{variant.__name__}.{name}"
    only_individual = set(individual.model_fields) - set(business.model_fields)
    only_business = set(business.model_fields) - set(individual.model_fields)
    assert only_individual == set(drafts.INDIVIDUAL_ONLY)
    assert only_business == set(drafts.BUSINESS_ONLY)


@pytest.mark.parametrize(("flat", "individual", "business"), BODIES, ids=["create", "update"])
def test_the_document_shows_the_oneof_by_customer_type(flat, individual, business) -> None:
    schema = flat.model_json_schema(ref_template="#/$defs/{model}")
    assert [entry["$ref"] for entry in schema["oneOf"]] == [
        f"#/$defs/{individual.__name__}",
        f"#/$defs/{business.__name__}",
    ]
    assert schema["discriminator"]["propertyName"] == "customerType"
    assert set(schema["discriminator"]["mapping"]) == {"INDIVIDUAL", "BUSINESS"}


def test_a_valid_variant_body_is_a_valid_flat_body() -> None:
    body = {
        "customerType": "BUSINESS",
        "businessInfo": {"legalName": "Acme Corp", "taxId": "12-3456789", "incorporatedOn": "2015-06-01"},
        "address": {"line1": "500 Market St", "postalCode": "94105", "country": "US"},
    }
    documented = BusinessCustomerCreateRequest.model_validate(body)
    flat = CustomerCreateRequestOneOf.model_validate(body)
    assert documented.model_dump(exclude_unset=True) == flat.model_dump(exclude_unset=True)
