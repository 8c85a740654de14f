"""Regenerate platpay/accounts/data/corridors.json from the reference OpenAPI document.

    .venv/bin/python tools/extract_corridors.py /path/to/reference-openapi.yaml

The field constraints (required, pattern, lengths, enums, rails, beneficiary requirements) come from the
reference's `<Ccy>ExternalAccountCreateInfo` schemas and the `<Ccy>AccountInfo` rails; OUR_RULES below adds
what the reference leaves unsaid: the currencies each type accepts, the corridor's country, the named
identifier checks (checksums, catalog look-ups) and the cross-field rules; NOT_SERVED the types platpay does
not register. Run it again when the reference changes and review the diff of the JSON;
tests/tools/test_extract_corridors.py checks that the JSON is the extraction of the document platpay
follows (tests/data keeps it compressed).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

OUTPUT = Path(__file__).resolve().parent.parent / "platpay" / "accounts" / "data" / "corridors.json"

CORRIDOR_COUNTRY = {
    "AED": "AE", "BDT": "BD", "BRL": "BR", "BWP": "BW", "CAD": "CA", "CNY": "CN", "COP": "CO", "DKK": "DK",
    "EGP": "EG", "GBP": "GB", "GHS": "GH", "GTQ": "GT", "HKD": "HK", "HTG": "HT", "IDR": "ID", "INR": "IN",
    "JMD": "JM", "KES": "KE", "MWK": "MW", "MXN": "MX", "MYR": "MY", "NGN": "NG", "PHP": "PH", "PKR": "PK",
    "RWF": "RW", "SGD": "SG", "SLV": "SV", "THB": "TH", "TZS": "TZ", "UGX": "UG", "USD": "US", "VND": "VN",
    "ZAR": "ZA", "ZMW": "ZM",
}  # fmt: skip

# SLV_ACCOUNT is El Salvador, whose currency is the US dollar; every other <CCY>_ACCOUNT takes <CCY>.
CURRENCY_OVERRIDES = {"SLV_ACCOUNT": ["USD"]}

WALLET_RULES = {
    "SPARK_WALLET": (["BTC", "USDB"], "spark_address"),
    "SOLANA_WALLET": (["USDC", "USDT"], "solana_address"),
    "TRON_WALLET": (["USDT"], "tron_address"),
    "POLYGON_WALLET": (["USDC"], "evm_address"),
    "BASE_WALLET": (["USDC"], "evm_address"),
    "ETHEREUM_WALLET": (["USDC"], "evm_address"),
}

# Account types of the reference platpay does not register, with the reason. (The 2026-08 document also adds
# `beneficiary` and `vaspName` to wallets, for the EU Travel Rule and the VASP directory: out of scope, so
# wallets keep taking only their address.)
NOT_SERVED = {
    "PLASMA_WALLET": "added by the 2026-08 document outside DRIFT-2026-08's rulings; no platpay currency "
    "settles on Plasma",
}

# Checks applied to a field wherever it appears, by field name.
CHECKS_BY_FIELD = {
    "iban": "iban",
    "swiftCode": "swift_bic",
    "bankName": "known_institution",
    "phoneNumber": "e164_phone",
    "country": "country_code",
}

OUR_RULES: dict[str, dict[str, Any]] = {
    "MXN_ACCOUNT": {"checks": {"clabeNumber": "clabe"}},
    "BRL_ACCOUNT": {"checks": {"taxId": "brazil_tax_id"}, "rules": ["pix_key_matches_type"]},
    # The NEFT/RTGS bank form names its rail in `rail` (the reference types it as a free string); the IFSC
    # identifies the branch, so bankName is a label there, not a catalog look-up.
    "INR_ACCOUNT": {
        "checks": {"vpa": "upi_vpa", "ifsc": "ifsc", "bankName": None},
        "enums": {"rail": ["NEFT", "RTGS"]},
        "rules": ["inr_bank_form"],
    },
    # bankName is a label on the wire (optional on every rail), the routing number names the bank.
    "USD_ACCOUNT": {
        "checks": {
            "routingNumber": "aba_routing_number",
            "intermediaryRoutingNumber": "aba_routing_number",
            "bankName": None,
            "intermediaryBankName": None,
        }
    },
    "EUR_ACCOUNT": {"rules": ["sepa_iban_country"]},
    "GBP_ACCOUNT": {"checks": {"sortCode": "uk_sort_code", "accountNumber": "uk_account_number"}},
    "SWIFT_ACCOUNT": {"atLeastOneOf": ["accountNumber", "iban"], "rules": ["iban_matches_country"]},
    "LIGHTNING": {
        "checks": {
            "invoice": "bolt11_invoice",
            "bolt12": "bolt12_offer",
            "lightningAddress": "lightning_address",
        },
        "exactlyOneOf": ["invoice", "bolt12", "lightningAddress"],
    },
}

# Fields whose checksum or format failure means the account itself is wrong (code INVALID_BANK_ACCOUNT).
IDENTIFIER_FIELDS = {
    "accountNumber", "iban", "clabeNumber", "routingNumber", "sortCode", "swiftCode", "bankCode", "branchCode",
    "pixKey", "vpa", "address", "invoice", "bolt12", "lightningAddress", "ifsc",
}  # fmt: skip
MOBILE_MONEY_IDENTIFIER = "phoneNumber"

STANDARD_INDIVIDUAL_FIELDS = {
    "beneficiaryType", "fullName", "birthDate", "nationality", "email", "phoneNumber", "countryOfResidence",
    "address",
}  # fmt: skip
CONSTRAINT_KEYS = ("minLength", "maxLength", "pattern", "enum")


def schema_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def field_spec(prop: dict[str, Any], *, required: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"required": required}
    for key in CONSTRAINT_KEYS:
        if key in prop:
            spec[key] = prop[key]
    return spec


def rail_requirements(description: str) -> dict[str, list[str]]:
    """Parse "- BANK_TRANSFER: accountNumber, bankName" lines from a schema description; a sentence after
    the field list ("- MOBILE_MONEY: bankName, phoneNumber. Pays an AliPay wallet") is prose, not fields."""
    found = {}
    for rail, names in re.findall(r"^- ([A-Z_]+): ([A-Za-z, ]+)", description or "", flags=re.MULTILINE):
        found[rail] = [name.strip() for name in names.split(",") if name.strip()]
    return found


def bank_type(account_type: str, schemas: dict[str, Any], create_schema: dict[str, Any]) -> dict[str, Any]:
    parts = create_schema["allOf"]
    base = schemas[schema_name(parts[1]["$ref"])]
    info_name = schema_name(parts[1]["$ref"]).removesuffix("Base")
    rails_part = schemas[info_name]["allOf"][1]
    rails = rails_part["properties"]["paymentRails"]["items"]["enum"]
    beneficiary = parts[2]["properties"]["beneficiary"]["discriminator"]["mapping"]["INDIVIDUAL"]
    individual = schemas[schema_name(beneficiary)]

    required = set(base.get("required", []))
    fields = {}
    for name, prop in base["properties"].items():
        if name == "accountType":
            continue
        fields[name] = field_spec(prop, required=name in required)

    currency = account_type.removesuffix("_ACCOUNT")
    entry: dict[str, Any] = {"kind": "BANK"}
    if account_type == "SWIFT_ACCOUNT":
        entry["anyFiatCurrency"] = True
    else:
        entry["currencies"] = CURRENCY_OVERRIDES.get(account_type, [currency])
        if currency in CORRIDOR_COUNTRY:
            entry["country"] = CORRIDOR_COUNTRY[currency]
    entry["paymentRails"] = rails
    entry["fields"] = fields
    by_rail = rail_requirements(base.get("description", ""))
    if by_rail:
        entry["railRequirements"] = by_rail

    mobile_money_only = rails == ["MOBILE_MONEY"] or "MOBILE_MONEY" in by_rail
    for name, spec in fields.items():
        ours = OUR_RULES.get(account_type, {})
        check = ours.get("checks", {}).get(name, CHECKS_BY_FIELD.get(name))  # None: no check of ours
        if check:
            spec["check"] = check
        if name in ours.get("enums", {}):
            spec["enum"] = ours["enums"][name]
        if name in IDENTIFIER_FIELDS or (name == MOBILE_MONEY_IDENTIFIER and mobile_money_only):
            spec["identifier"] = True

    extra_required = sorted(set(individual.get("required", [])) - {"beneficiaryType", "fullName"})
    extra_fields = {
        name: field_spec(prop, required=name in individual.get("required", []))
        for name, prop in individual["properties"].items()
        if name not in STANDARD_INDIVIDUAL_FIELDS
    }
    entry["individualBeneficiary"] = {"required": extra_required, "extraFields": extra_fields}
    return entry


def non_bank_type(
    account_type: str, schemas: dict[str, Any], create_schema: dict[str, Any]
) -> dict[str, Any]:
    info = schemas[schema_name(create_schema["allOf"][1]["$ref"])]
    required = set(info.get("required", []))
    fields = {
        name: field_spec(prop, required=name in required)
        for name, prop in info["properties"].items()
        if name != "accountType"
    }
    if account_type == "LIGHTNING":
        entry: dict[str, Any] = {"kind": "LIGHTNING", "currencies": ["BTC"], "paymentRails": []}
    else:
        currencies, check = WALLET_RULES[account_type]
        entry = {"kind": "WALLET", "currencies": currencies, "paymentRails": []}
        fields["address"]["check"] = check
    for name, spec in fields.items():
        check = OUR_RULES.get(account_type, {}).get("checks", {}).get(name)
        if check:
            spec["check"] = check
        spec["identifier"] = True
    entry["fields"] = fields
    return entry


def extract(reference: Path) -> dict[str, Any]:
    spec = yaml.safe_load(reference.read_text("utf-8"))
    schemas = spec["components"]["schemas"]
    mapping = schemas["ExternalAccountCreateInfoOneOf"]["discriminator"]["mapping"]
    types: dict[str, Any] = {}
    for account_type in sorted(mapping):
        if account_type in NOT_SERVED:
            continue
        create_schema = schemas[schema_name(mapping[account_type])]
        # a bank type's third part is its inline beneficiary oneOf; a wallet's are $refs (the Travel Rule
        # beneficiary and custody fields of 2026-08, which platpay does not take: NOT_SERVED's note)
        has_beneficiary = len(create_schema["allOf"]) > 2 and "$ref" not in create_schema["allOf"][2]
        build = bank_type if has_beneficiary else non_bank_type
        entry = build(account_type, schemas, create_schema)
        for key in ("exactlyOneOf", "atLeastOneOf", "rules"):
            if key in OUR_RULES.get(account_type, {}):
                entry[key] = OUR_RULES[account_type][key]
        types[account_type] = entry
    return {
        "source": (
            f"reference OpenAPI {reference.name} (API version 2025-10-13): "
            "components.schemas.*ExternalAccountCreateInfo, "
            "*AccountInfo paymentRails, *Beneficiary; checks, currencies and rules added by "
            "tools/extract_corridors.py"
        ),
        "accountTypes": types,
    }


def main() -> None:
    reference = Path(sys.argv[1])
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(extract(reference), indent=2, ensure_ascii=False) + "\n", "utf-8")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
