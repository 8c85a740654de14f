"""Write the generated parts of docs/configuration.md (from platpay/config.py's Settings fields) and
docs/errors.md (every error code platpay's source can answer with). tests/test_docs.py regenerates both in
memory and fails when a file differs: run `.venv/bin/python tools/gen_docs.py` (from the checkout) and commit.

Only the text between the `<!-- generated:start -->` and `<!-- generated:end -->` markers is generated; the
rest of each file is written by hand."""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

START, END = "<!-- generated:start -->", "<!-- generated:end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _type_name(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
    text = repr(annotation) if not isinstance(annotation, (str, type)) else text
    text = text.replace("typing.", "").replace("pathlib.", "").replace("pydantic.types.", "")
    literal = re.fullmatch(r"Literal\[(.*)\]", text)
    if literal:
        return "one of " + ", ".join(f"`{v.strip(chr(39))}`" for v in literal.group(1).split(", "))
    return f"`{text}`"


def _bounds(field: Any) -> str:
    words = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤", "min_length": "length ≥", "max_length": "length ≤"}
    found = []
    for item in field.metadata:
        for attribute, word in words.items():
            value = getattr(item, attribute, None)
            if value is not None:
                found.append(f"{word} {value}")
    return f" ({', '.join(found)})" if found else ""


def _default(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (dict, list)):
        return f"`{json.dumps(value)}`"
    if value == "":
        return "empty"
    return f"`{value}`"


def configuration_table() -> str:
    from platpay.config import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    lines = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        variable = f"{prefix}{name}".upper()
        kind = _type_name(field.annotation) + _bounds(field)
        lines.append(
            f"| `{variable}` | {_cell(kind)} | {_cell(_default(field.default))} | {_cell(field.description or '')} |"
        )
    return "\n".join(lines) + "\n"


# What each code means, by hand: a code the source answers that has no entry here fails the drift test
# (tests/test_docs.py), so a new code gets its line in docs/errors.md.
MEANINGS = {
    "AMOUNT_OUT_OF_RANGE": "an amount outside what the operation or the corridor accepts",
    "BULK_UPLOAD_JOB_NOT_FOUND": "no bulk customer import with this id",
    "CARDHOLDER_KYC_NOT_APPROVED": "a card for a cardholder whose KYC is not APPROVED",
    "CARD_ALREADY_CLOSED": "closing a card that is already CLOSED",
    "CARD_NOT_MUTABLE": "changing a closed card",
    "CLOCK_AHEAD_OF_REAL_TIME": "POST /sandbox/clock/reset while the sandbox clock is ahead of real time",
    "CONFLICT": "the generic conflict: a taken platformCustomerId, a duplicate external account, an agent "
    "action no longer pending, the last MANAGE token, a document under review, a contact channel not "
    "required or already verified, …",
    "CUSTOMER_DELETED": "a second delete of a deleted customer",
    "EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS": "a wallet that already has an EMAIL_OTP credential",
    "EMAIL_OTP_CREDENTIAL_SET_CHANGED": "the wallet's EMAIL_OTP credentials changed during the operation",
    "END_USER_TERMS_NOT_ACCEPTED": "a quote for a customer without an acceptance of the current End User "
    "Terms, on a platform that requires one",
    "END_USER_TERMS_VERSION_NOT_FOUND": "an endUserTermsConsent naming a version other than the current one",
    "FORBIDDEN": "the credentials may not do this: a missing permission, an agent's policy, a sandbox "
    "operation with production credentials, another platform's invitation",
    "FUNDING_SOURCE_INELIGIBLE": "a card funding source that is not the cardholder's or not in the card's "
    "currency",
    "GONE": "a resource that no longer exists",
    "IDEMPOTENCY_KEY_IN_USE": "a request with the same Idempotency-Key is still running (Retry-After)",
    "INSUFFICIENT_BALANCE": "the account's available balance does not cover the debit",
    "INTERNAL_ERROR": "an unexpected failure (never a stack trace)",
    "INVALID_BANK_ACCOUNT": "bank account details that fail validation (routing number, IBAN, CLABE check "
    "digits)",
    "INVALID_CURRENCY": "an unknown currency, or one the platform does not support where it is used",
    "INVALID_INPUT": "a request that fails validation; details.fields and details.errors name each bad field",
    "INVALID_STATE_TRANSITION": "a card state change its current state does not allow",
    "INVALID_UMA_ADDRESS": "a malformed UMA address, or one outside the platform's domain",
    "INVITATION_ALREADY_CLAIMED": "claiming or cancelling an invitation already claimed",
    "INVITATION_CANCELLED": "claiming or cancelling a cancelled invitation",
    "INVITATION_EXPIRED": "claiming or cancelling an invitation past its expiresAt",
    "INVITATION_NOT_FOUND": "no invitation with this code in the environment",
    "LOOKUP_REQUEST_NOT_FOUND": "an unknown or expired receiver lookupId",
    "METHOD_NOT_ALLOWED": "a method the route does not take (with Allow)",
    "MISSING_MANDATORY_USER_INFO": "a customer lacks a field its currencies' providers require, or an email "
    "or phone number a verification needs",
    "NOT_FOUND": "no such route",
    "PASSKEY_CREDENTIAL_ALREADY_EXISTS": "registering a passkey the wallet already has",
    "PAYLOAD_TOO_LARGE": "a body (or uploaded file) over the limit",
    "QUOTE_ALREADY_EXECUTED": "executing a quote twice",
    "QUOTE_EXPIRED": "executing (or paying) a quote at or after its expiresAt",
    "QUOTE_NOT_FOUND": "no quote with this id",
    "RATE_LIMITED": "too many attempts in the window (Retry-After)",
    "REFERENCE_NOT_FOUND": "the generic not-found: no such resource, or one the caller may not see",
    "REQUEST_ID_MISSING": "a signed wallet retry without a valid Request-Id",
    "SELF_PAYMENT": "a payment from an account to itself",
    "SERVICE_UNAVAILABLE": "the database is unreachable or restarting, or refuses writes (read-only, disk full) (Retry-After: 1)",
    "TOKEN_NOT_FOUND": "no API token with this id",
    "TRANSACTION_NOT_CANCELLABLE": "cancelling anything but a bank transfer the rail has not settled yet",
    "TRANSACTION_NOT_FOUND": "no transaction (or card transaction) with this id",
    "TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL": "approving or rejecting an incoming payment that is no "
    "longer pending",
    "UMA_ADDRESS_EXISTS": "a umaAddress another customer has",
    "UMA_NOT_FOUND": "no UMA counterparty at this address",
    "UNAUTHORIZED": "missing or wrong credentials: API credentials, an agent token, an OTP, an OIDC token, a "
    "WebAuthn ceremony",
    "UNSUPPORTED_MEDIA_TYPE": "a body that is not JSON (or multipart where a file is expected)",
    "USER_NOT_FOUND": "no customer with this id, or at this UMA address",
    "USER_NOT_READY": "a customer whose KYC is REJECTED or on HOLD moving money",
    "VERIFICATION_NOT_AWAITING_REVIEW": "deciding a verification that is not in PENDING_MANUAL_REVIEW "
    "(decided already, or never left to a person); details.verificationStatus names its status",
    "WALLET_SIGNATURE_BODY_MISMATCH": "a wallet stamp made over a different body",
    "WALLET_SIGNATURE_INVALID": "a wallet stamp whose signature does not verify",
    "WALLET_SIGNATURE_MALFORMED": "a wallet stamp that cannot be parsed",
    "WALLET_SIGNATURE_MISSING": "a signed retry without its wallet stamp",
    "WEBHOOK_DELIVERY_ERROR": "POST /sandbox/webhooks/test could not deliver the TEST event",
    "WEBHOOK_DELIVERY_NOT_FOUND": "no webhook delivery with this id",
    "WEBHOOK_ENDPOINT_NOT_SET": "POST /sandbox/webhooks/test with no webhookEndpoint configured",
}


def errors_table() -> str:
    from platpay.errors import ApiError
    from tests.support.error_codes import REFERENCE_CODES, _modules, _subclasses, answered_codes

    _modules()  # imports every platpay module, so every ApiError subclass exists
    answered, _unknown = answered_codes()
    raised_by: dict[str, list[str]] = defaultdict(list)
    for cls in [ApiError, *_subclasses(ApiError)]:
        if cls.__module__.startswith("platpay"):
            area = cls.__module__.removeprefix("platpay.").split(".")[0]
            raised_by[cls.code].append(f"{area}.{cls.__name__}")
    missing = sorted(set(answered) - set(MEANINGS))
    if missing:
        raise SystemExit(f"tools/gen_docs.py: MEANINGS lacks {', '.join(missing)}: say what each means")
    lines = ["| code | status | reference | meaning | raised by |", "|---|---|---|---|---|"]
    for code in sorted(answered):
        statuses = ", ".join(str(s) for s in sorted(answered[code]))
        reference = "yes" if code in REFERENCE_CODES else "platpay's"
        meaning = MEANINGS[code]
        classes = ", ".join(f"`{name}`" for name in sorted(set(raised_by.get(code, [])))) or "a literal code"
        lines.append(f"| `{code}` | {statuses} | {reference} | {_cell(meaning)} | {_cell(classes)} |")
    return "\n".join(lines) + "\n"


GENERATED = {
    ROOT / "docs" / "configuration.md": configuration_table,
    ROOT / "docs" / "errors.md": errors_table,
}


def rendered(path: Path, current: str) -> str:
    """`current` with its generated part replaced by what the source says now."""
    head, _, rest = current.partition(START)
    _, found, tail = rest.partition(END)
    if not found:
        raise SystemExit(f"{path.relative_to(ROOT)} lacks the {START} … {END} markers")
    return f"{head}{START}\n{GENERATED[path]()}{END}{tail}"


def main() -> int:
    for path in GENERATED:
        current = path.read_text(encoding="utf-8")
        new = rendered(path, current)
        if new != current:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
