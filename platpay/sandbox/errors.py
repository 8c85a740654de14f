"""The sandbox's own errors, and the failures its fault injection answers (Svc-Sandbox-Fault)."""

from __future__ import annotations

from platpay.errors import Conflict, InternalError, RateLimited, ServiceUnavailable


class InjectedUnavailable(ServiceUnavailable):
    code = "SERVICE_UNAVAILABLE"


class InjectedRateLimited(RateLimited):
    code = "RATE_LIMITED"


class InjectedInternalError(InternalError):
    code = "INTERNAL_ERROR"


class InjectedInFlightConflict(Conflict):
    code = "IDEMPOTENCY_KEY_IN_USE"
