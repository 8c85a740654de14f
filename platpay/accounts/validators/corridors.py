"""External account details per account type: validation, canonical form, rails, identifiers.

Every account type of the reference is described in data/corridors.json: the fields with the reference's
constraints, the named checks we add (checksums, catalog look-ups), which currencies and rails it has and
what its beneficiary needs. This module applies that description to a client's `accountInfo` and reports
every problem at once:

    info = corridors.validate_account_info(currency="MXN", account_info=body["accountInfo"])
    corridors.primary_identifier(info)      # "002010077777777771"
    corridors.response_account_info(info)   # info + "paymentRails": ["SPEI"]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from platpay.accounts.validators.beneficiary import validate_beneficiary
from platpay.accounts.validators.corridor_specs import BANK, RAIL_FIELD, AccountTypeSpec, account_type_specs
from platpay.accounts.validators.field_checks import RECORD_RULES, CheckContext, validate_field
from platpay.accounts.validators.problems import FieldProblems, json_type
from platpay.kit import currencies

ACCOUNT_TYPES: frozenset[str] = frozenset(account_type_specs())

# The field that identifies the account, in order of preference when a type has several.
_PRIMARY_IDENTIFIER_FIELDS = (
    "clabeNumber", "iban", "accountNumber", "pixKey", "vpa", "phoneNumber", "address", "invoice", "bolt12",
    "lightningAddress",
)  # fmt: skip
# Fields that tell apart two accounts with the same number (the same account number at two banks). A
# bankName counts where it is a catalog code (checked); where it is a free label (USD, INR) it does not.
_INSTITUTION_FIELDS = (
    "routingNumber",
    "sortCode",
    "bankCode",
    "branchCode",
    "ifsc",
    "bankName",
    "provider",
    "region",
)


def _spec(account_type: str) -> AccountTypeSpec:
    spec = account_type_specs().get(account_type)
    if spec is None:
        raise KeyError(f"unknown account type {account_type!r}")
    return spec


def _sibling(field: str, name: str) -> str:
    """`currency` sits beside `accountInfo`: "destination.accountInfo" -> "destination.currency"."""
    parent, _, _ = field.rpartition(".")
    return f"{parent}.{name}" if parent else name


def _account_type_spec(account_info: object, field: str, problems: FieldProblems) -> AccountTypeSpec | None:
    if not isinstance(account_info, Mapping):
        problems.add(field, f"must be an object with an accountType, got {json_type(account_info)}")
        return None
    account_type = account_info.get("accountType")
    if account_type is None:
        problems.add(f"{field}.accountType", f"is required; one of {', '.join(sorted(ACCOUNT_TYPES))}")
        return None
    if not isinstance(account_type, str):
        problems.add(f"{field}.accountType", f"must be a string, got {json_type(account_type)}")
        return None
    spec = account_type_specs().get(account_type)
    if spec is None:
        shown = account_type if len(account_type) <= 40 else account_type[:40] + "..."
        problems.add(
            f"{field}.accountType",
            f"unknown account type {shown!r}; one of {', '.join(sorted(ACCOUNT_TYPES))}",
        )
    return spec


def _check_currency(spec: AccountTypeSpec, currency: object, field: str, problems: FieldProblems) -> None:
    currency_field = _sibling(field, "currency")
    if not isinstance(currency, str):
        problems.add(currency_field, f"must be a currency code, got {json_type(currency)}")
    elif spec.any_fiat_currency:
        known = currencies.get(currency)
        if known is None or known.kind != "FIAT":
            problems.add(
                currency_field, f"{spec.account_type} pays out fiat currencies; {currency!r} is not one"
            )
    elif currency not in spec.currencies:
        problems.add(
            currency_field, f"{spec.account_type} holds {' or '.join(spec.currencies)}, not {currency!r}"
        )


def _check_context(spec: AccountTypeSpec, account_info: Mapping[str, Any], currency: object) -> CheckContext:
    """Institutions are looked up in the corridor: its home country and currency, or, for a type whose
    info names the bank's country (SWIFT), that country in whatever currency the wire is sent."""
    if "country" in spec.fields:
        raw_country = account_info.get("country")
        country = raw_country.strip().upper() if isinstance(raw_country, str) else None
        return CheckContext(
            account_type=spec.account_type, institution_country=country, institution_currency=None
        )
    return CheckContext(
        account_type=spec.account_type,
        institution_country=spec.country,
        institution_currency=currency if isinstance(currency, str) else None,
    )


def _given(account_info: Mapping[str, Any], name: str) -> bool:
    value = account_info.get(name)
    return value is not None and not (isinstance(value, str) and not value.strip())


def _check_field_combinations(
    spec: AccountTypeSpec, account_info: Mapping[str, Any], field: str, problems: FieldProblems
) -> None:
    """Presence rules across fields, judged on what the client sent (a field sent but invalid counts as
    given: its own problem is reported separately)."""
    if spec.exactly_one_of:
        given = [name for name in spec.exactly_one_of if _given(account_info, name)]
        if len(given) != 1:
            found = f"got {' and '.join(given)}" if given else "got none"
            problems.add(
                field, f"{spec.account_type} takes exactly one of {', '.join(spec.exactly_one_of)}; {found}"
            )
    if spec.at_least_one_of and not any(_given(account_info, name) for name in spec.at_least_one_of):
        problems.add(field, f"{spec.account_type} needs at least one of {', '.join(spec.at_least_one_of)}")
    if spec.rail_requirements:
        present = {name for name in spec.fields if _given(account_info, name)}
        if not spec.usable_rails(present, chosen=account_info.get(RAIL_FIELD)):
            options = " or ".join(
                f"{rail} ({', '.join(names)})" for rail, names in spec.rail_requirements.items()
            )
            problems.add(field, f"{spec.account_type} needs every field of one payment rail: {options}")


def validate_account_info(
    *, currency: str, account_info: object, field: str = "accountInfo"
) -> dict[str, Any]:
    """The canonical account info to store, or InvalidInput listing every problem found.

    The error code is INVALID_BANK_ACCOUNT when the account identifier itself fails its format or
    checksum (IBAN, CLABE, routing number, wallet address...), INVALID_INPUT otherwise; details are
    {"fields": [{"field": "accountInfo.iban", "message": "..."}, ...]}.
    """
    problems = FieldProblems()
    spec = _account_type_spec(account_info, field, problems)
    if spec is None or not isinstance(account_info, Mapping):
        problems.raise_if_any()
        raise AssertionError("unreachable: a missing spec is always a reported problem")

    _check_currency(spec, currency, field, problems)
    allowed = ["accountType", *spec.fields]
    if spec.takes_beneficiary:
        allowed.append("beneficiary")
    elif account_info.get("beneficiary") is not None:
        problems.add(f"{field}.beneficiary", f"{spec.account_type} accounts take no beneficiary")
    problems.reject_unknown(
        {name: value for name, value in account_info.items() if name != "beneficiary"},
        allowed,
        field=field,
        owner=spec.account_type,
    )

    context = _check_context(spec, account_info, currency)
    info: dict[str, Any] = {"accountType": spec.account_type}
    for name, field_spec in spec.fields.items():
        value = validate_field(
            field_spec, account_info.get(name), field=f"{field}.{name}", context=context, problems=problems
        )
        if value is not None:
            info[name] = value
    _check_field_combinations(spec, account_info, field, problems)
    for rule in spec.rules:
        RECORD_RULES[rule](info, field, problems)

    if spec.takes_beneficiary and spec.individual_beneficiary is not None:
        beneficiary = validate_beneficiary(
            account_info.get("beneficiary"),
            field=f"{field}.beneficiary",
            account_type=spec.account_type,
            rules=spec.individual_beneficiary,
            problems=problems,
        )
        if beneficiary is not None:
            info["beneficiary"] = beneficiary
    problems.raise_if_any()
    return info


def primary_identifier(account_info: Mapping[str, Any]) -> str:
    """The account number, IBAN, CLABE, PIX key, UPI address, phone, wallet address or Lightning
    destination of a validated account info."""
    for name in _PRIMARY_IDENTIFIER_FIELDS:
        value = account_info.get(name)
        if isinstance(value, str) and value:
            return value
    raise ValueError(f"{account_info.get('accountType')!r} account info carries no identifier")


def duplicate_key(account_info: Mapping[str, Any]) -> str:
    """A key equal for two infos that reach the same account: the type, the institution fields and the
    identifier (EVM addresses compared case-insensitively, as the chain does)."""
    account_type = account_info.get("accountType")
    identifier = primary_identifier(account_info)
    if account_type in ("ETHEREUM_WALLET", "BASE_WALLET", "POLYGON_WALLET"):
        identifier = identifier.lower()
    spec = account_type_specs().get(str(account_type))
    institution = [
        str(account_info[name])
        for name in _INSTITUTION_FIELDS
        if account_info.get(name)
        and (name != "bankName" or (spec is not None and spec.fields[name].check is not None))
    ]
    return ":".join([str(account_type), *institution, identifier])


def payment_rails(account_type: str) -> list[str]:
    """Every rail the type can be paid over (empty for wallets and Lightning, which have none)."""
    return list(_spec(account_type).payment_rails)


def usable_rails(stored: Mapping[str, Any]) -> list[str]:
    """The rails this validated account can be paid over: its type's rails, limited to those whose fields
    it has where they depend on the rail (CNY mobile money vs bank transfer; INR's UPI address vs the
    NEFT/RTGS bank form, whose `rail` picks one). Empty for wallets and Lightning."""
    spec = _spec(str(stored.get("accountType")))
    return spec.usable_rails(
        {name for name in spec.fields if stored.get(name)}, chosen=stored.get(RAIL_FIELD)
    )


def response_account_info(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The stored info as the API returns it: bank types gain `paymentRails`, limited to the rails whose
    fields the account has where a corridor's fields depend on the rail (mobile money vs bank transfer)."""
    response = {name: value for name, value in stored.items() if name != "beneficiary"}
    spec = account_type_specs().get(str(stored.get("accountType")))
    if spec is not None and spec.kind == BANK:
        response["paymentRails"] = usable_rails(stored)
    if "beneficiary" in stored:
        response["beneficiary"] = stored["beneficiary"]
    return response


def bank_name_required(account_type: str) -> bool:
    """Whether the type needs a bankName from GET /discoveries (always, or on every rail it offers)."""
    spec = _spec(account_type)
    bank_name = spec.fields.get("bankName")
    if bank_name is None:
        return False
    if bank_name.required:
        return True
    return bool(spec.rail_requirements) and all(
        "bankName" in names for names in spec.rail_requirements.values()
    )
