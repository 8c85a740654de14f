"""Error codes platpay can answer, read from its source: shared by tests/test_errors.py,
tests/test_error_codes.py and tools/gen_docs.py (docs/errors.md's table of every code)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import platpay
from platpay.errors import ApiError, InvalidInput

ROOT = Path(__file__).resolve().parents[2]

# The reference API's error codes (INTERFACE-FACTS §1.2, its operation texts and guides, and the codes its
# August document added inside SPEC's scope: DRIFT-2026-08.md), written out here
# so that a drift in platpay cannot move them too.
REFERENCE_CODES = frozenset({
    "INVALID_INPUT", "MISSING_MANDATORY_USER_INFO", "INVITATION_ALREADY_CLAIMED", "INVITATIONS_NOT_CONFIGURED",
    "INVALID_UMA_ADDRESS", "INVITATION_CANCELLED", "QUOTE_REQUEST_FAILED", "INVALID_PAYREQ_RESPONSE",
    "INVALID_RECEIVER", "PARSE_PAYREQ_RESPONSE_ERROR", "CERT_CHAIN_INVALID", "CERT_CHAIN_EXPIRED",
    "INVALID_PUBKEY_FORMAT", "MISSING_REQUIRED_UMA_PARAMETERS", "SENDER_NOT_ACCEPTED", "AMOUNT_OUT_OF_RANGE",
    "INVALID_CURRENCY", "INVALID_TIMESTAMP", "INVALID_NONCE", "INVALID_REQUEST_FORMAT", "INVALID_BANK_ACCOUNT",
    "SELF_PAYMENT", "LOOKUP_REQUEST_FAILED", "PARSE_LNURLP_RESPONSE_ERROR", "INVALID_AMOUNT",
    "WEBHOOK_ENDPOINT_NOT_SET", "WEBHOOK_DELIVERY_ERROR", "LOW_QUALITY", "DATA_MISMATCH", "EXPIRED",
    "SUSPECTED_FRAUD", "UNSUITABLE_DOCUMENT", "INCOMPLETE", "EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS",
    "PASSKEY_CREDENTIAL_ALREADY_EXISTS", "UNAUTHORIZED", "INVALID_SIGNATURE", "WALLET_SIGNATURE_MISSING",
    "WALLET_SIGNATURE_MALFORMED", "WALLET_SIGNATURE_BODY_MISMATCH", "WALLET_SIGNATURE_INVALID",
    "REQUEST_ID_MISSING", "FORBIDDEN", "USER_NOT_READY", "COUNTERPARTY_NOT_ALLOWED", "VELOCITY_LIMIT_EXCEEDED",
    "TRANSACTION_NOT_FOUND", "INVITATION_NOT_FOUND", "USER_NOT_FOUND", "QUOTE_NOT_FOUND",
    "LOOKUP_REQUEST_NOT_FOUND", "TOKEN_NOT_FOUND", "BULK_UPLOAD_JOB_NOT_FOUND", "REFERENCE_NOT_FOUND",
    "UMA_NOT_FOUND", "METHOD_NOT_ALLOWED", "TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL", "UMA_ADDRESS_EXISTS",
    "EMAIL_OTP_EMAIL_ALREADY_EXISTS", "EMAIL_OTP_CREDENTIAL_SET_CHANGED", "CONFLICT", "CUSTOMER_DELETED",
    "UNSUPPORTED_UMA_VERSION", "PAYREQ_REQUEST_FAILED", "COUNTERPARTY_PUBKEY_FETCH_ERROR",
    "NO_COMPATIBLE_UMA_VERSION", "LNURLP_REQUEST_FAILED", "EMAIL_OTP_CREDENTIAL_SYNC_FAILED", "RATE_LIMITED",
    "GRID_SWITCH_ERROR", "INTERNAL_ERROR", "UNRECOGNIZED_MANDATORY_PAYEE_DATA_KEY", "NOT_IMPLEMENTED",
    "CARDHOLDER_KYC_NOT_APPROVED", "FUNDING_SOURCE_INELIGIBLE", "INVALID_STATE_TRANSITION",
    "CARD_ALREADY_CLOSED", "CARD_NOT_MUTABLE", "QUOTE_EXPIRED", "INSUFFICIENT_BALANCE", "SERVICE_UNAVAILABLE",
    "END_USER_TERMS_NOT_ACCEPTED", "END_USER_TERMS_VERSION_NOT_FOUND", "TRANSACTION_NOT_CANCELLABLE",
})  # fmt: skip


def codes_in_source() -> set[str]:
    """The error codes in platpay's source, found textually: `code = "X"` (class attributes and keyword
    arguments), `_error_response(status, "X", …)` and the `_STATUS_CODES` table."""
    source = "\n".join(path.read_text() for path in (ROOT / "platpay").rglob("*.py"))
    answered = set(re.findall(r'\bcode\s*=\s*"([A-Z][A-Z_]*[A-Z])"', source))
    answered |= set(re.findall(r'_error_response\(\s*\d+,\s*"([A-Z][A-Z_]*[A-Z])"', source))
    return answered | set(re.findall(r'^\s+\d{3}: "([A-Z][A-Z_]*[A-Z])",$', source, re.MULTILINE))


CODE = re.compile(r"[A-Z][A-Z0-9_]*[A-Z0-9]")
# Callees that take a literal `code=` without being ApiError classes, and the status that code ends up in:
# invalid_field builds an InvalidInput; a customer validation Problem's code becomes an InvalidInput's.
CODE_CARRIERS = {"invalid_field": InvalidInput.status, "Problem": InvalidInput.status}

Pairs = dict[str, set[int]]  # code -> the statuses it is answered (or allowed) with


def _modules() -> list[ModuleType]:
    names = [platpay.__name__]
    names += [info.name for info in pkgutil.walk_packages(platpay.__path__, prefix=f"{platpay.__name__}.")]
    return [importlib.import_module(name) for name in names]


def _resolve(node: ast.expr, module: ModuleType) -> Any:
    """The object a callee expression (`name` or `a.b.name`) names in `module`, or None."""
    if isinstance(node, ast.Name):
        return getattr(module, node.id, None)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, module)
        return getattr(owner, node.attr, None) if owner is not None else None
    return None


def _callee_name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _is_code(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(CODE.fullmatch(node.value))


def _is_status(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and 100 <= node.value <= 599


def _is_status_table(node: ast.Dict) -> bool:
    """{400: "INVALID_INPUT", …}"""
    return bool(node.keys) and all(_is_status(k) for k in node.keys) and all(_is_code(v) for v in node.values)


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def answered_codes() -> tuple[Pairs, list[str]]:
    """Every (status, code) the source can answer with, and the literal codes whose status the test cannot
    tell (each must be taught to CODE_CARRIERS)."""
    pairs: Pairs = defaultdict(set)
    unknown: list[str] = []
    modules = _modules()
    for cls in [ApiError, *_subclasses(ApiError)]:
        if cls.__module__.startswith(f"{platpay.__name__}."):
            pairs[cls.code].add(cls.status)
    for module in modules:
        if module.__file__ is None:
            continue
        path = Path(module.__file__)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg != "code" or not _is_code(keyword.value):
                        continue
                    code = keyword.value.value  # type: ignore[attr-defined]
                    callee = _resolve(node.func, module)
                    if isinstance(callee, type) and issubclass(callee, ApiError):
                        pairs[code].add(callee.status)
                    elif _callee_name(node.func) in CODE_CARRIERS:
                        pairs[code].add(CODE_CARRIERS[_callee_name(node.func)])
                    else:
                        unknown.append(f"{path.relative_to(ROOT)}:{node.lineno} code={code!r}")
                if len(node.args) >= 2 and _is_status(node.args[0]) and _is_code(node.args[1]):
                    pairs[node.args[1].value].add(node.args[0].value)  # type: ignore[attr-defined]
            elif isinstance(node, ast.Dict) and _is_status_table(node):
                for key, value in zip(node.keys, node.values, strict=True):
                    pairs[value.value].add(key.value)  # type: ignore[attr-defined, union-attr]
    return pairs, unknown
