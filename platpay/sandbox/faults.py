"""Fault injection for clients under test: the `Svc-Sandbox-Fault` request header (sandbox credentials only;
production credentials are served as if it were absent).

    Svc-Sandbox-Fault: status=503                  503 SERVICE_UNAVAILABLE
    Svc-Sandbox-Fault: status=503;retryAfter=5     ... with Retry-After: 5
    Svc-Sandbox-Fault: status=429;retryAfter=2     429 RATE_LIMITED with Retry-After: 2 (1 if not given)
    Svc-Sandbox-Fault: status=500                  500 INTERNAL_ERROR
    Svc-Sandbox-Fault: inFlightConflict            409 IDEMPOTENCY_KEY_IN_USE, as a concurrent retry gets
    Svc-Sandbox-Fault: delayMs=1500                answers 1.5 s late (the operation itself is performed)

A failure is answered after authentication and before the operation: nothing is done, nothing is stored
(an Idempotency-Key sent with it stays unused). `delayMs` combines with the others (`status=503;delayMs=200`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from platpay.auth.principal import Principal
from platpay.auth.principals import on_authenticated
from platpay.errors import ApiError, invalid_field
from platpay.sandbox.errors import (
    InjectedInFlightConflict,
    InjectedInternalError,
    InjectedRateLimited,
    InjectedUnavailable,
)

HEADER = "Svc-Sandbox-Fault"
STATUSES = (429, 500, 503)
MAX_DELAY_MS = 30_000
MAX_RETRY_AFTER = 3600


@dataclass(frozen=True)
class Fault:
    status: int | None = None
    retry_after: int | None = None
    delay_ms: int = 0
    in_flight_conflict: bool = False


def _bad(message: str) -> ApiError:
    return invalid_field(HEADER, message, location="header")


def _int(name: str, value: str, most: int) -> int:
    if not value.isdigit() or int(value) > most:
        raise _bad(f"{name} must be a whole number from 0 to {most}, not {value!r}")
    return int(value)


def parse(value: str) -> Fault:
    status = retry_after = None
    delay_ms = 0
    in_flight = False
    for part in (piece.strip() for piece in value.split(";")):
        if not part:
            continue
        name, _, raw = part.partition("=")
        name, raw = name.strip(), raw.strip()
        if name == "inFlightConflict" and not raw:
            in_flight = True
        elif name == "status":
            if not raw.isdigit() or int(raw) not in STATUSES:
                raise _bad(f"status must be one of {', '.join(map(str, STATUSES))}, not {raw!r}")
            status = int(raw)
        elif name == "retryAfter":
            retry_after = _int("retryAfter", raw, MAX_RETRY_AFTER)
        elif name == "delayMs":
            delay_ms = _int("delayMs", raw, MAX_DELAY_MS)
        else:
            raise _bad(f"unknown fault {part!r}: use status=, retryAfter=, delayMs= or inFlightConflict")
    if status is not None and in_flight:
        raise _bad("give status= or inFlightConflict, not both")
    if retry_after is not None and status not in (429, 503):
        raise _bad("retryAfter goes with status=429 or status=503")
    if status is None and not in_flight and not delay_ms:
        raise _bad("no fault given")
    return Fault(status, retry_after, delay_ms, in_flight)


@on_authenticated
async def inject(headers: Mapping[str, str], principal: Principal) -> None:
    """Answer the fault the request's Svc-Sandbox-Fault header asks for (sandbox credentials only)."""
    value = headers.get(HEADER)
    if value is None or not principal.tenant.is_sandbox:
        return
    fault = parse(value)
    if fault.delay_ms:
        await asyncio.sleep(fault.delay_ms / 1000)
    details = {"injected": value}
    message = f"injected by the {HEADER} header; the operation was not performed"
    if fault.in_flight_conflict:
        raise InjectedInFlightConflict(
            f"a request with this Idempotency-Key is still in progress ({message})", details=details
        )
    if fault.status == 429:
        raise InjectedRateLimited(
            f"rate limited ({message})", details=details, headers={"Retry-After": str(fault.retry_after or 1)}
        )
    if fault.status == 503:
        retry = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
        raise InjectedUnavailable(f"service unavailable ({message})", details=details, headers=retry)
    if fault.status == 500:
        raise InjectedInternalError(f"internal error ({message})", details=details)
