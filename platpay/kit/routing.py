"""Our router and route class: every operation documents the error shape, answers 415 to a body in the
wrong media type, and omits null fields from responses."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi import params as fastapi_params
from fastapi.routing import APIRoute

from platpay.errors import ErrorBody, UnsupportedMediaType

_ERROR_DESCRIPTIONS = {
    400: "Invalid input: `details.fields` names each bad field",
    401: "Missing or invalid credentials",
    403: "The credentials may not do this",
    404: "Not found (or not visible to these credentials)",
    405: "Method not allowed on this path",
    409: "Conflicts with the resource's current state",
    413: "Request body too large",
    415: "Unsupported content type",
    429: "Too many requests",
    500: "Internal error",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text} for status, text in _ERROR_DESCRIPTIONS.items()
}


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


class ApiRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["response_model_exclude_none"] = True
        super().__init__(path, endpoint, **kwargs)

    def _expected_media_type(self) -> str | None:
        if self.body_field is None:
            return None
        is_form = isinstance(self.body_field.field_info, fastapi_params.Form)
        return "multipart/form-data" if is_form else "application/json"

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        expected = self._expected_media_type()
        if expected is None:
            return handler

        async def checked(request: Request) -> Response:
            has_body = (
                request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers
            )
            if has_body:
                media = _media_type(request.headers.get("content-type"))
                json_ok = expected == "application/json" and (media == expected or media.endswith("+json"))
                if not json_ok and media != expected:
                    raise UnsupportedMediaType(
                        f"send the body as {expected}, not {media or 'an unlabelled body'}",
                        details={"expected": expected, "received": media or None},
                    )
            return await handler(request)

        return checked


def api_router(**kwargs: Any) -> APIRouter:
    return APIRouter(route_class=ApiRoute, responses=dict(ERROR_RESPONSES), **kwargs)


def as_utc(value: datetime | None) -> datetime | None:
    """Query timestamps without an offset are taken as UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
