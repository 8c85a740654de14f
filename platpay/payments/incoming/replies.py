"""What the platform's answer to INCOMING_PAYMENT.PENDING decides (INTERFACE-FACTS §5.6). Pure: no I/O.

| reply                                   | decision                                                          |
|-----------------------------------------|-------------------------------------------------------------------|
| 200, mandatory requested fields covered | APPROVE (receiverCustomerInfo kept for the sender)                |
| 200, a mandatory requested field absent | FAIL, MISSING_MANDATORY_PAYEE_DATA, failureDetails.missingFields  |
| 202                                     | DEFER: approve or reject through the API before the deadline      |
| 403                                     | REJECT, PAY_REQUEST_FAILED, failureDetails {code, message,        |
|                                         | reason} from the body (code REJECTED_BY_PLATFORM if it has none)  |
| 422                                     | FAIL, MISSING_MANDATORY_PAYEE_DATA, failureDetails.requiredFields |
| anything else, timeout, no connection   | FAIL, PAYMENT_APPROVAL_WEBHOOK_ERROR                              |

Once the platform has answered 202 it has said it decides through the API: a later reply to a redelivery
that is not a decision (another 202, an error, no answer) changes nothing; a 200, 403 or 422 still decides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

APPROVE, DEFER, REJECT, FAIL, IGNORE = "APPROVE", "DEFER", "REJECT", "FAIL", "IGNORE"
MISSING_MANDATORY_PAYEE_DATA = "MISSING_MANDATORY_PAYEE_DATA"
# A rejection by the receiving platform refuses the sender's UMA pay request: the closest reference reason.
PAY_REQUEST_FAILED = "PAY_REQUEST_FAILED"
REJECTED_BY_PLATFORM = "REJECTED_BY_PLATFORM"
WEBHOOK_ERROR = "PAYMENT_APPROVAL_WEBHOOK_ERROR"
TIMED_OUT = "PAYMENT_APPROVAL_TIMED_OUT"
_TEXT_LIMIT = 500


@dataclass(frozen=True)
class Decision:
    action: str  # APPROVE | DEFER | REJECT | FAIL | IGNORE
    failure_reason: str | None = None
    failure_details: dict[str, Any] = field(default_factory=dict)
    receiver_customer_info: dict[str, Any] = field(default_factory=dict)


def _present(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    return value not in (None, [], {})


def missing_mandatory(requested: list[dict[str, Any]], info: dict[str, Any]) -> list[str]:
    """The mandatory requested field names `info` does not supply (a blank value does not count)."""
    return [f["name"] for f in requested if f.get("mandatory") and not _present(info.get(f["name"]))]


def _json_object(body: str | None) -> dict[str, Any]:
    """The reply body as a JSON object; anything else (empty, text, truncated, an array) reads as {}."""
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _text(value: Any) -> str | None:
    return value[:_TEXT_LIMIT] if isinstance(value, str) and value else None


def _error_details(reply: dict[str, Any], *extra: str) -> dict[str, Any]:
    details = {key: _text(reply.get(key)) for key in ("code", "message", *extra)}
    return {key: value for key, value in details.items() if value is not None}


def rejection(message: str, answer: dict[str, Any]) -> dict[str, Any]:
    """failureDetails of a payment the platform rejected: its own code/message/reason win over ours."""
    return {"code": REJECTED_BY_PLATFORM, "message": message, **answer}


def decide(
    *,
    status: int | None,
    body: str | None,
    error: str | None,
    requested: list[dict[str, Any]],
    awaiting_decision: bool,
) -> Decision:
    """The decision a reply carries. `awaiting_decision`: the platform already answered 202."""
    reply = _json_object(body)
    if status == 200:
        info = reply.get("receiverCustomerInfo")
        info = info if isinstance(info, dict) else {}
        missing = missing_mandatory(requested, info)
        if missing:
            return Decision(FAIL, MISSING_MANDATORY_PAYEE_DATA, {"missingFields": missing})
        return Decision(APPROVE, receiver_customer_info=info)
    if status == 202:
        return Decision(IGNORE if awaiting_decision else DEFER)
    if status == 403:
        answer = _error_details(reply, "reason")
        return Decision(
            REJECT,
            PAY_REQUEST_FAILED,
            rejection("your webhook endpoint answered 403 to INCOMING_PAYMENT.PENDING", answer),
        )
    if status == 422:
        wanted = _error_details(reply)
        fields = reply.get("requiredFields")
        if isinstance(fields, list):
            wanted["requiredFields"] = [name[:64] for name in fields if isinstance(name, str)][:50]
        return Decision(FAIL, MISSING_MANDATORY_PAYEE_DATA, wanted)
    if awaiting_decision:
        return Decision(IGNORE)
    problem: dict[str, Any] = {"responseStatus": status} if status is not None else {}
    if error:
        problem["error"] = error[:_TEXT_LIMIT]
    return Decision(FAIL, WEBHOOK_ERROR, problem)
