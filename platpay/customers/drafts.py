"""A customer draft's validation (SPEC §2): the rules of a create body and of a PATCH against the customer
it changes, the provider-required fields per currency, and the rule problems beside a body's schema errors,
so that one 400 names every problem. Pure apart from the settings and the tenants' provider requirements:
no database; customers/service.py creates and updates with what these functions return."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from datetime import UTC, date
from typing import Any

from pydantic import ValidationError

from platpay.config import Settings
from platpay.customers import validators as v
from platpay.customers.errors import (
    EndUserTermsVersionNotFound,
    MissingMandatoryUserInfo,
    PlatformCustomerIdExists,
    UmaAddressExists,
)
from platpay.customers.models import CustomerRow
from platpay.customers.schemas import (
    CustomerCreateRequestOneOf,
    CustomerUpdateRequestOneOf,
    EndUserTermsConsent,
)
from platpay.errors import ApiError, InvalidCurrency, InvalidInput, InvalidUmaAddress
from platpay.kit import clock
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

# An individual's enhanced-due-diligence answers (the reference's CustomerEdd), kept together (due_diligence).
DUE_DILIGENCE_FIELDS = (
    "source_of_funds_categories",
    "source_of_funds_other_description",
    "source_of_wealth_categories",
    "source_of_wealth_other_description",
    "purpose_of_account",
    "purpose_of_account_other_description",
    "expected_monthly_transaction_count",
    "expected_monthly_transaction_volume",
    "annual_income_range",
    "net_worth_range",
    "pep_status",
)
IDENTIFICATION_FIELDS = ("id_type", "identifier", "country_of_issuance")
INDIVIDUAL_ONLY = ("full_name", "birth_date", "nationality", *IDENTIFICATION_FIELDS, *DUE_DILIGENCE_FIELDS)
BUSINESS_ONLY = ("business_info",)
CONFLICTS = frozenset({PlatformCustomerIdExists, UmaAddressExists})


def refusal(problems: list[v.Problem]) -> ApiError:
    details = {"fields": [p.as_detail() for p in problems], "errors": [p.as_error() for p in problems]}
    summary = "; ".join(f"{p.field}: {p.message}" for p in problems[:5])
    kinds = {p.error for p in problems}
    if kinds == {UmaAddressExists}:
        return UmaAddressExists(summary, details=details)
    if kinds and kinds <= CONFLICTS:
        # platformCustomerId taken, or both keys taken (the ordinary retry of a create that succeeded): one
        # 409 CONFLICT naming every taken key.
        return PlatformCustomerIdExists(summary, details=details)
    if kinds == {MissingMandatoryUserInfo}:
        return MissingMandatoryUserInfo(f"missing customer information: {summary}", details=details)
    if len(kinds) == 1 and kinds <= {InvalidCurrency, InvalidUmaAddress, EndUserTermsVersionNotFound}:
        return kinds.pop()(summary, details=details)
    return InvalidInput(f"invalid customer: {summary}", details=details)


def _type_problems(draft: Mapping[str, Any], customer_type: str) -> list[v.Problem]:
    wrong = BUSINESS_ONLY if customer_type == "INDIVIDUAL" else INDIVIDUAL_ONLY
    return [
        v.Problem(v._camel(name), f"does not apply to {customer_type} customers")
        for name in wrong
        if draft.get(name) is not None
    ]


def _check_fields(
    draft: Mapping[str, Any],
    *,
    tenant: TenantContext,
    today: date,
    creating: bool,
    customer_type: str | None,
    settings: Settings,
    row: CustomerRow | None = None,
) -> tuple[dict[str, Any], list[v.Problem]]:
    """Validate the fields present in `draft`; returns normalized values (snake_case) and problems.
    `customer_type` None: the body's type is itself invalid, so which fields apply is not checked. `row`:
    the customer a PATCH changes (the rules that span fields read what it already has)."""
    values: dict[str, Any] = {}
    problems = _type_problems(draft, customer_type) if customer_type is not None else []
    problems += v.check_name(draft.get("full_name"), "fullName", sandbox_suffix=tenant.is_sandbox)
    birth, date_problems = v.parse_past_date(draft.get("birth_date"), "birthDate", today=today)
    problems += date_problems
    if birth is not None:
        values["birth_date"] = birth
    problems += v.check_country(draft.get("nationality"), "nationality")
    problems += v.check_country(draft.get("region"), "region")
    problems += v.check_email(draft.get("email"))
    problems += v.check_address(draft.get("address"))
    problems += v.check_business_info(draft.get("business_info"), creating=creating, today=today)
    problems += v.check_currencies(draft.get("currencies"), platform_codes=tenant.currency_codes)
    problems += v.check_identification(draft, stored_id_type=row.id_type if row is not None else None)
    problems += v.check_free_text(draft, v.INDIVIDUAL_OTHER_DESCRIPTIONS)
    problems += v.check_unique_lists(draft, ("source_of_funds_categories", "source_of_wealth_categories"))
    given_edd = {key: draft[key] for key in DUE_DILIGENCE_FIELDS if key in draft}
    if given_edd:
        merged = {**((row.due_diligence or {}) if row is not None else {}), **given_edd}
        problems += v.check_other_descriptions(merged, given_edd, v.INDIVIDUAL_OTHER_DESCRIPTIONS)
        values["due_diligence"] = merged
    if draft.get("business_info") is not None:
        info = draft["business_info"]
        merged_info = {**((row.business_info or {}) if row is not None else {}), **info}
        problems += v.check_other_descriptions(
            merged_info, info, v.BUSINESS_OTHER_DESCRIPTIONS, prefix="businessInfo."
        )
    consent = draft.get("end_user_terms_consent")
    if consent is not None:
        problems += v.check_consent(consent, now=clock.now(), versions=end_user_terms_versions(settings))
        values["end_user_terms_consent"] = _consent_record(consent)
    if draft.get("id_type") is not None:
        values["country_of_issuance"] = draft.get("country_of_issuance") or v.ID_COUNTRY
    pcid = draft.get("platform_customer_id")
    if pcid is not None and (pcid != pcid.strip() or not pcid.isprintable()):
        problems.append(
            v.Problem("platformCustomerId", "must be printable without leading or trailing spaces")
        )
    if draft.get("uma_address") is not None:
        uma, uma_problems = v.normalize_uma_address(draft["uma_address"], domain=tenant.uma_domain)
        problems += uma_problems
        values["uma_address"] = uma
    for key in (
        "full_name",
        "nationality",
        "region",
        "email",
        "phone_number",
        "address",
        "business_info",
        "currencies",
        "platform_customer_id",
        "id_type",
        "identifier",
        "country_of_issuance",
    ):
        if key in draft and key not in values:
            values[key] = draft[key]
    return values, problems


def _consent_record(consent: dict[str, Any]) -> dict[str, Any]:
    """An endUserTermsConsent as stored and shown (the API's names; the address in its canonical form)."""
    try:
        address = str(ipaddress.ip_address(consent["ip_address"]))
    except ValueError:
        address = consent["ip_address"]  # refused by the checks; kept only for the problems' sake
    return EndUserTermsConsent.model_validate(
        {**consent, "accepted_at": consent["accepted_at"].astimezone(UTC), "ip_address": address},
        by_name=True,
    ).model_dump(mode="json", by_alias=True)


def end_user_terms_versions(settings: Settings) -> tuple[str, ...]:
    """The versions an acceptance may name: the current one only (a consent to an earlier version stays on
    the customer, but no longer counts)."""
    return (settings.end_user_terms_version,)


def provider_required(codes: list[str]) -> dict[str, list[str]]:
    return {code: tenants_service.provider_requirements(code)["customer"] for code in codes}


def _overlaps(field: str, named: set[str]) -> bool:
    """Whether `field` is, contains or lies inside a field already named."""
    return any(
        field == other or field.startswith(f"{other}.") or other.startswith(f"{field}.") for other in named
    )


def _provider_problems(
    customer: dict[str, Any], currencies: list[str] | None, problems: list[v.Problem]
) -> list[v.Problem]:
    """The provider-required fields (per declared currency) the customer lacks, beside `problems` already
    found: a field already named is not named again, and unusable currencies are not looked up."""
    named = {p.field for p in problems}
    if not currencies or _overlaps("currencies", named):
        return []
    missing = v.missing_for_currencies(customer, provider_required(currencies))
    return [p for p in missing if not _overlaps(p.field, named)]


def create_problems(
    draft: Mapping[str, Any],
    *,
    tenant: TenantContext,
    today: date,
    customer_type: str | None,
    settings: Settings,
) -> tuple[dict[str, Any], list[v.Problem]]:
    """Every rule problem of a create body (SPEC §2), and its normalized values."""
    values, problems = _check_fields(
        draft, tenant=tenant, today=today, creating=True, customer_type=customer_type, settings=settings
    )
    if customer_type is not None:
        merged = {"customer_type": customer_type, **values}
        problems += _provider_problems(merged, draft.get("currencies"), problems)
    return values, problems


def _explicit_nulls(draft: dict[str, Any]) -> list[str]:
    """The fields of a PATCH body sent as null, nested ones included (`businessInfo.taxId`)."""
    nulls = []
    for key, value in draft.items():
        if value is None:
            nulls.append(v._camel(key))
        elif isinstance(value, dict):
            nulls += [f"{v._camel(key)}.{v._camel(inner)}" for inner, item in value.items() if item is None]
    return nulls


def _without_nulls(draft: dict[str, Any]) -> dict[str, Any]:
    return {
        key: {k: item for k, item in value.items() if item is not None} if isinstance(value, dict) else value
        for key, value in draft.items()
        if value is not None
    }


def update_problems(
    draft: dict[str, Any],
    *,
    row: CustomerRow | None,
    tenant: TenantContext,
    today: date,
    customer_type: str | None,
    settings: Settings,
) -> tuple[dict[str, Any], list[v.Problem]]:
    """Every rule problem of a PATCH body against the customer `row` (None: not known, so the checks that
    compare with it are skipped), and the values to set."""
    problems: list[v.Problem] = []
    if row is not None and customer_type is not None and customer_type != row.customer_type:
        problems.append(
            v.Problem("customerType", f"is {row.customer_type} and cannot change to {customer_type}")
        )
    if "region" in draft:
        problems.append(v.Problem("region", "is immutable after create"))
    for name in _explicit_nulls(draft):
        if name == "address" or not name.startswith("address."):
            problems.append(v.Problem(name, "cannot be null: omit it to keep its value"))
        else:
            problems.append(v.Problem(name, "cannot be null: omit it (an address is replaced as a whole)"))
    draft = _without_nulls(draft)
    values, field_problems = _check_fields(
        draft,
        tenant=tenant,
        today=today,
        creating=False,
        customer_type=customer_type,
        settings=settings,
        row=row,
    )
    problems += field_problems
    if "business_info" in values and row is not None:
        if row.business_info is None:  # the first businessInfo: what a create would need of it
            problems += [
                p
                for p in v.check_business_info(values["business_info"], creating=True, today=today)
                if p not in problems
            ]
        values["business_info"] = {**(row.business_info or {}), **(jsonable(values["business_info"]) or {})}
    if row is not None and customer_type == row.customer_type:
        problems += _provider_problems({**fields_of(row), **values}, values.get("currencies"), problems)
    return values, problems


Loc = tuple[str | int, ...]
# Stand-ins for an address's required fields when they failed schema validation, so that the rules still
# run on its other fields; whatever the rules say of a stand-in is dropped (its field is already named).
_STAND_INS = {"address": {"line1": "-", "postalCode": "-", "country": "US"}}


def _without_failed(raw: dict[str, Any], failed: list[Loc]) -> dict[str, Any]:
    """`raw` less the fields that failed schema validation; inside an object (address, businessInfo) only
    its failed fields are left out (or stood in for, when required)."""
    kept: dict[str, Any] = {}
    for key, value in raw.items():
        inner = [loc[1:] for loc in failed if loc[0] == key]
        if not inner:
            kept[key] = value
        elif isinstance(value, dict) and all(inner):
            bad = {loc[0] for loc in inner}
            stand_ins = {k: item for k, item in _STAND_INS.get(key, {}).items() if k in bad}
            kept[key] = {**stand_ins, **{k: item for k, item in value.items() if k not in bad}}
    return kept


def _salvage(
    model: type[CustomerCreateRequestOneOf | CustomerUpdateRequestOneOf],
    raw: dict[str, Any],
    failed: list[Loc],
) -> Any:
    """The body made of the fields of `raw` that pass schema validation, or None."""
    body = _without_failed(raw, failed)
    if "customerType" not in body:  # the type is itself missing or invalid: any will do for the schema
        body["customerType"] = "INDIVIDUAL"
    for _ in range(3):  # an object missing a field it needs once its bad ones are left out goes whole
        try:
            return model.model_validate(body)
        except ValidationError as error:
            tops = {loc[0] for loc in (tuple(e["loc"]) for e in error.errors()) if loc}
            if not tops or "customerType" in tops:
                return None
            body = {key: value for key, value in body.items() if key not in tops}
    return None


def problems_beside_schema_errors(
    raw: Any,
    failed: list[Loc],
    *,
    model: type[CustomerCreateRequestOneOf | CustomerUpdateRequestOneOf],
    tenant: TenantContext,
    settings: Settings,
    row: CustomerRow | None = None,
) -> list[v.Problem]:
    """A create or PATCH body that failed schema validation at `failed` (locations of the body's fields,
    camelCase; none for a bulk-import row refused for its empty cells) may have rule problems in its other
    fields: find them, so that one 400 names every problem. Fields named by (or inside, or around) a schema
    error are not named again. `row`: the customer a PATCH changes, if it is known."""
    if not isinstance(raw, dict) or any(not loc for loc in failed):
        return []
    body = _salvage(model, raw, failed)
    if body is None:
        return []
    draft = body.model_dump(exclude_unset=True)
    customer_type = raw.get("customerType") if ("customerType",) not in failed else None
    if customer_type not in ("INDIVIDUAL", "BUSINESS"):
        customer_type = None
    today = clock.now().date()
    if model is CustomerCreateRequestOneOf:
        _, problems = create_problems(
            draft, tenant=tenant, today=today, customer_type=customer_type, settings=settings
        )
    else:
        _, problems = update_problems(
            draft, row=row, tenant=tenant, today=today, customer_type=customer_type, settings=settings
        )
    named = {".".join(str(part) for part in loc) for loc in failed}
    return [p for p in problems if not _overlaps(p.field, named)]


def jsonable(info: dict[str, Any] | None) -> dict[str, Any] | None:
    if info is None:
        return None
    return {
        k: (val.isoformat() if isinstance(val, date) else val) for k, val in info.items() if val is not None
    }


def fields_of(row: CustomerRow) -> dict[str, Any]:
    return {
        "customer_type": row.customer_type,
        "full_name": row.full_name,
        "birth_date": row.birth_date,
        "nationality": row.nationality,
        "email": row.email,
        "phone_number": row.phone_number,
        "address": row.address,
        "business_info": row.business_info,
    }
