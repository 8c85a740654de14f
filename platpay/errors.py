"""Every error the API returns is an ApiError rendered as {status, code, message, details}."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypedDict

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    """The one error shape: `status` equals the HTTP status; `details` names what was wrong."""

    status: int = Field(description="HTTP status code")
    code: str = Field(description="machine-readable error code, e.g. INVALID_INPUT")
    message: str = Field(description="what went wrong, with the offending value")
    details: dict[str, Any] = Field(default_factory=dict, description="structured context, e.g. bad fields")


class ApiError(Exception):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "INTERNAL_ERROR"

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"status": self.status, "code": self.code, "message": self.message, "details": self.details}


class FieldConstraint(TypedDict, total=False):
    """What a bad field's value must satisfy, as the reference's `FieldConstraint` names it: only the keys that
    apply (a pattern mismatch carries `pattern`, a value outside a fixed set `enum`)."""

    format: str  # date-time, date, time, uuid, url, email, iso3166-1-alpha-2...
    pattern: str
    enum: list[str]
    minLength: int
    maxLength: int


def field_error(field: str, message: str, constraint: FieldConstraint | None = None) -> dict[str, Any]:
    """One entry of a 400's `details.errors` (the reference's `FieldError`): `{field, constraint?, message}`."""
    entry: dict[str, Any] = {"field": field}
    if constraint:
        entry["constraint"] = dict(constraint)
    entry["message"] = message
    return entry


def errors_of(fields: list[Any]) -> list[dict[str, Any]]:
    """`details.errors` for a 400 whose raise site wrote only `details.fields` ({field, location?, message}
    entries): one FieldError per entry, in the same order, with no constraint (the site named none)."""
    return [
        field_error(str(entry.get("field", "")), str(entry.get("message", "")))
        for entry in fields
        if isinstance(entry, Mapping)
    ]


class InvalidInput(ApiError):
    """A 400. Whatever builds it, its answer names each bad field twice: platpay's `details.fields`
    ({field, location?, message}) and, beside it, the reference's `details.errors` ({field, constraint?,
    message}, in the same order). A raise site that knows the constraint (the request validation handler,
    `invalid_field(..., constraint=...)`) writes `errors` itself; for the others it is derived from `fields`
    when the error is rendered, so no site can leave it out."""

    status = 400
    code = "INVALID_INPUT"

    def body(self) -> dict[str, Any]:
        body = super().body()
        fields = self.details.get("fields")
        if isinstance(fields, list) and "errors" not in self.details:
            body["details"] = {**self.details, "errors": errors_of(fields)}
        return body


class InvalidCurrency(InvalidInput):
    """An unknown currency code, or one the platform does not support where it is used."""

    code = "INVALID_CURRENCY"


class InvalidUmaAddress(InvalidInput):
    code = "INVALID_UMA_ADDRESS"


class Unauthorized(ApiError):
    status = 401
    code = "UNAUTHORIZED"


class Forbidden(ApiError):
    status = 403
    code = "FORBIDDEN"


class NotFound(ApiError):
    status = 404
    code = "NOT_FOUND"


ECHOED_ID_MAX = 128  # characters of an id a not-found answer echoes (a path id can be long; ours are ~50)


class ResourceNotFound(NotFound):
    """A resource named by its id that the caller may not see. One that does not exist, another tenant's (another
    platform's, or the other environment's of the same platform) and, for an agent, another customer's all
    answer this one body, whose only variable part is the id echoed: nobody learns that an id exists by asking
    for it (no existence oracle). Each resource kind has one subclass naming the kind (`resource`) and the details key
    that carries the id (`id_key`); a raise site passes the id alone, so no site words it differently."""

    resource: ClassVar[str]
    id_key: ClassVar[str]
    echoed_chars: ClassVar[int] = ECHOED_ID_MAX

    def __init__(self, resource_id: str) -> None:
        echoed = (
            resource_id if len(resource_id) <= self.echoed_chars else resource_id[: self.echoed_chars] + "…"
        )
        super().__init__(f"{self.resource} {echoed!r} not found", details={self.id_key: echoed})


class MethodNotAllowed(ApiError):
    status = 405
    code = "METHOD_NOT_ALLOWED"


class Conflict(ApiError):
    status = 409
    code = "CONFLICT"


class Gone(ApiError):
    status = 410
    code = "GONE"


class PayloadTooLarge(ApiError):
    status = 413
    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(ApiError):
    status = 415
    code = "UNSUPPORTED_MEDIA_TYPE"


class RateLimited(ApiError):
    status = 429
    code = "RATE_LIMITED"


class InternalError(ApiError):
    status = 500
    code = "INTERNAL_ERROR"


class ServiceUnavailable(ApiError):
    status = 503
    code = "SERVICE_UNAVAILABLE"


def invalid_field(
    field: str,
    message: str,
    *,
    error: type[InvalidInput] = InvalidInput,
    constraint: FieldConstraint | None = None,
    **extra: Any,
) -> InvalidInput:
    """A 400 naming one bad field, in the same details shape as framework validation errors; `error` is the
    InvalidInput class whose code it answers (INVALID_INPUT unless a more precise one applies), `constraint`
    what the value must satisfy (`{"format": "url"}`), for `details.errors`."""
    entry = {"field": field, "message": message, **extra}
    details = {"fields": [entry], "errors": [field_error(field, message, constraint)]}
    return error(f"{field}: {message}", details=details)
