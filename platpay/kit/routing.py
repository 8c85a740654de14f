"""Our router and route class: every operation documents the error shape (`Error<status>`, kit/openapi.py),
answers 415 to a body in the wrong media type, and omits null fields from responses."""

from __future__ import annotations

import contextlib
import functools
import heapq
import inspect
import re
import typing
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from fastapi import params as fastapi_params
from fastapi._compat import ModelField, Undefined, field_annotation_is_sequence
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import (
    _get_multidict_value,
    _get_param_aliases,
    _get_param_model,
    _is_json_field,
    _validate_value_with_model_field,
    request_body_to_args,
    request_params_to_args,
)
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import AfterValidator, BaseModel, BeforeValidator
from pydantic_core import PydanticCustomError
from starlette.requests import ClientDisconnect
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from platpay import BASE_PATH
from platpay.errors import UnsupportedMediaType
from platpay.kit import json_body
from platpay.kit.openapi import error_content

_ERROR_DESCRIPTIONS = {
    400: "Invalid input: `details.fields` and `details.errors` name each bad field",
    401: "Missing or invalid credentials",
    403: "The credentials may not do this",
    404: "Not found (or not visible to these credentials)",
    409: "Conflicts with the resource's current state",
    413: "Request body too large",
    415: "Unsupported content type",
    429: "Too many requests",
    500: "Internal error",
}
_ERROR_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "the Basic challenge", "schema": {"type": "string"}}},
    429: {"Retry-After": {"description": "seconds to wait before retrying", "schema": {"type": "integer"}}},
}


def documented_error(status: int, description: str | None = None) -> dict[str, Any]:
    """An error response of `status` for `responses=`: the document's `Error<status>` schema."""
    doc: dict[str, Any] = {"content": error_content(status)}
    if description:
        doc["description"] = description
    return doc


# A matched operation never answers 405 (that is another method on its path), so none lists it.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: documented_error(status, text) for status, text in _ERROR_DESCRIPTIONS.items()
}
for _status, _headers in _ERROR_HEADERS.items():
    ERROR_RESPONSES[_status]["headers"] = _headers


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _with_error_body(responses: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """An error documented without a body (`responses={410: {"description": "customer deleted"}}`) has ours."""
    completed = dict(responses)
    for status, doc in responses.items():
        if str(status)[0] in "45" and "model" not in doc and "content" not in doc:
            completed[status] = {**doc, "content": error_content(status)}
    return completed


class ApiRoute(APIRoute):
    matches_by_path_only = True  # its `matches` only turns requests away sooner (RouteIndex)

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["response_model_exclude_none"] = True
        kwargs["responses"] = _with_error_body(kwargs.get("responses") or {})
        super().__init__(path, endpoint, **kwargs)
        # only an operation that takes a body (FastAPI's, or one it reads itself and documents) can answer 415
        if self.body_field is None and not (self.openapi_extra or {}).get("requestBody"):
            self.responses = {status: doc for status, doc in self.responses.items() if str(status) != "415"}
        self._literal_prefix = self.path_format.split("{", 1)[0]
        lean = self._lean_app()
        if lean is not None:
            self.app = lean

    def _lean_app(self) -> Any:
        """The route's ASGI app without FastAPI's per-request machinery, for an operation whose inputs are
        plain: a JSON body (one model), path and header parameters of one value each, the request, and
        dependencies that take only the request and such header parameters and have none of their own (the
        authentication `principal: Principal = Viewer`, the Idempotency-Key's `idem: Idempotent =
        Idempotency`), each once; and an endpoint returning a Response itself (nothing to serialize).

        It does what FastAPI's app does for such a route, in the same order and with FastAPI's own
        validation (`request_params_to_args` with its per-field work done once, `_params_reader`;
        `request_body_to_args`: the same values, the same errors, the same RequestValidationError): the
        dependencies in order (one whose parameters fail is not called, its errors kept), then the
        endpoint's path and header parameters, then its body. It skips the two
        AsyncExitStacks, the route-level exception wrapper (the app's ExceptionMiddleware outside applies
        the same handlers), telemetry, the dependency cache and the generic walk of every kind of
        parameter: ~30% of an authenticated GET /config's CPU in-process; ~18% of a POST /transfer-out's Python
        function calls (cProfile).
        None (FastAPI's app) for any other route; with dependency overrides set, FastAPI's app runs.
        tests/kit/test_lean_route.py compares both apps' answers request by request."""
        if type(self).get_route_handler is not ApiRoute.get_route_handler:
            return None  # a route class that wraps the handler (customers/endpoints.py) keeps it
        if self.max_body_size is not None or (self.body_field is not None and self._embed_body_fields):
            return None
        if self._expected_media_type() not in (None, "application/json"):
            return None
        if self._expected_media_type() is None and (self.openapi_extra or {}).get("requestBody"):
            return None  # it reads its body itself
        dependant = self.dependant
        endpoint = dependant.call
        if endpoint is None or not inspect.iscoroutinefunction(endpoint) or not _plain(dependant, body=True):
            return None
        try:
            returns = typing.get_type_hints(endpoint).get("return")
        except Exception:
            return None
        if not (isinstance(returns, type) and issubclass(returns, Response)):
            return None
        steps = []
        for sub in dependant.dependencies:
            call = sub.call
            if sub.name is None or call is None or sub.dependencies or not _plain(sub, body=False):
                return None
            if not (inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(type(call).__call__)):
                return None
            steps.append((sub.name, call, sub.request_param_name, _params_reader(sub.header_params)))
        if len({id(step[1]) for step in steps}) != len(steps):
            return None  # FastAPI would call a repeated dependency once
        path_params, header_params = (
            _params_reader(dependant.path_params),
            _params_reader(dependant.header_params),
        )
        body_params, request_name = tuple(dependant.body_params), dependant.request_param_name

        async def handler(request: Request) -> Response:
            values: dict[str, Any] = {}
            errors: list[Any] = []
            for name, call, sub_request_name, sub_headers in steps:
                kwargs, failed = sub_headers(request.headers) if sub_headers is not None else ({}, [])
                if failed:
                    errors.extend(failed)
                    continue
                if sub_request_name:
                    kwargs[sub_request_name] = request
                values[name] = await call(**kwargs)
            for read, source in ((path_params, request.path_params), (header_params, None)):
                if read is not None:
                    found, failed = read(request.headers if source is None else source)
                    values.update(found)
                    errors.extend(failed)
            body: Any = Undefined
            if body_params:
                # the JSON `checked` parsed (kit/json_body.py), which FastAPI would take from the same cache
                body = getattr(request, "_json", Undefined)
                found, failed = await request_body_to_args(
                    body_fields=list(body_params), received_body=body, embed_body_fields=False
                )
                values.update(found)
                errors.extend(failed)
            if errors:
                raise RequestValidationError(errors, body=None if body is Undefined else body)
            if request_name:
                values[request_name] = request
            response: Response = await endpoint(**values)
            return response

        answer = self._checked(handler)
        full, overrides = self.app, self.dependency_overrides_provider

        async def app(scope: Scope, receive: Any, send: Any) -> None:
            if overrides is not None and getattr(overrides, "dependency_overrides", None):
                await full(scope, receive, send)
                return
            response = await answer(Request(scope, receive, send))
            await response(scope, receive, send)

        return app

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        # The router tries every route in order until one matches, and FastAPI's own check costs several
        # microseconds per route; a path that does not begin with this route's literal prefix can match
        # neither fully nor partially (parameters never match literal text), so it is turned away at once.
        if not scope.get("root_path") and not scope.get("path", "").startswith(self._literal_prefix):
            return Match.NONE, {}
        return super().matches(scope)

    def _expected_media_type(self) -> str | None:
        if self.body_field is None:
            return None
        is_form = isinstance(self.body_field.field_info, fastapi_params.Form)
        return "multipart/form-data" if is_form else "application/json"

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        return self._checked(super().get_route_handler())

    def _checked(
        self, handler: Callable[[Request], Coroutine[Any, Any, Response]]
    ) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """`handler` behind the body's checks: the media type (415), its charset, JSON parsed once
        (kit/json_body.py), or a body refused where the operation takes none."""
        expected = self._expected_media_type()
        if expected is None:
            if (self.openapi_extra or {}).get("requestBody"):
                return handler  # it reads (and documents) its body itself: an upload as it streams
            return _without_body(handler)

        async def checked(request: Request) -> Response:
            if _has_body(request):
                media = _media_type(request.headers.get("content-type"))
                json_ok = expected == "application/json" and (media == expected or media.endswith("+json"))
                if not json_ok and media != expected:
                    raise UnsupportedMediaType(
                        f"send the body as {expected}, not {media or 'an unlabelled body'}",
                        details={"expected": expected, "received": media or None},
                    )
                # Read (and cache) the body here: an over-limit chunked body then answers 413 from the edge
                # middleware's PayloadTooLarge, which FastAPI's own body parsing would turn into a bare 400.
                # A form is parsed (and cached) instead of read whole: its files stream to spooled
                # temporary files, so an upload is never held in memory. JSON is parsed here, once for
                # every operation, by kit/json_body.py (UTF-8 only, no duplicate keys, no NaN); FastAPI
                # takes the parsed value from the request's cache.
                with contextlib.suppress(ClientDisconnect):
                    if expected == "multipart/form-data":
                        await request.form()
                    else:
                        json_body.check_charset(request.headers.get("content-type"))
                        raw = await request.body()
                        if raw:
                            request._json = json_body.parse(raw)
            return await handler(request)

        return checked


ParamsReader = Callable[[Any], tuple[dict[str, Any], list[Any]]]


def _params_reader(fields: Sequence[ModelField]) -> ParamsReader | None:
    """FastAPI's `request_params_to_args(fields, received)` as a function of `received`, with what it works out
    per field on every request (its aliases, whether it takes a list, whether it is a parameter model) worked
    out once: the same values and errors, by FastAPI's own functions. None without fields."""
    if not fields:
        return None
    fields = tuple(fields)
    if any(_get_param_model(field) is not None for field in fields):
        return functools.partial(request_params_to_args, fields)
    plans = []
    for field in fields:
        many = not _is_json_field(field) and field_annotation_is_sequence(field.field_info.annotation)
        info = field.field_info
        assert isinstance(info, fastapi_params.Param)
        plans.append((field, tuple(_get_param_aliases(field)), info.in_.value, many))

    def read(received: Any) -> tuple[dict[str, Any], list[Any]]:
        values: dict[str, Any] = {}
        errors: list[Any] = []
        for field, aliases, where, many in plans:
            _, alias = next((pair for pair in aliases if pair[1] in received), aliases[0])
            if many:
                value = _get_multidict_value(field, received, alias=alias)
            else:  # (what _get_multidict_value does for a field of one value, in a mapping or in headers)
                value = received.get(alias, None)
                if value is None:
                    value = Undefined
            found, failed = _validate_value_with_model_field(
                field=field, value=value, values=values, loc=(where, alias)
            )
            if failed:
                errors.extend(failed)
            else:
                values[field.name] = found
        return values, errors

    return read


def _plain(dependant: Dependant, *, body: bool) -> bool:
    """Whether `dependant` takes only what the lean app supplies: the request, one-valued path (and,
    with `body`, body) parameters, one-valued header parameters."""
    if (
        dependant.query_params
        or dependant.cookie_params
        or (dependant.body_params and not body)
        or (dependant.path_params and not body)
        or dependant.websocket_param_name
        or dependant.http_connection_param_name
        or dependant.response_param_name
        or dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
    ):
        return False
    return all(
        _one_value(field.field_info.annotation)
        for field in (*dependant.path_params, *dependant.header_params)
    )


def _one_value(annotation: Any) -> bool:
    """A parameter of one value: not a sequence, not a model of several (FastAPI's parameter models)."""
    if field_annotation_is_sequence(annotation):
        return False
    return not any(
        isinstance(arg, type) and issubclass(arg, BaseModel)
        for arg in (annotation, *typing.get_args(annotation))
    )


def _has_body(request: Request) -> bool:
    """A Content-Length (the first) other than 0, or any Transfer-Encoding: read from the raw headers, not
    through Starlette's Headers (built for it on every request without a body: ~4% of a GET's CPU)."""
    length = None
    for name, value in request.scope["headers"]:
        if name == b"transfer-encoding":
            return True
        if name == b"content-length" and length is None:
            length = value
    return length is not None and length != b"0"


def _without_body(
    handler: Callable[[Request], Coroutine[Any, Any, Response]],
) -> Callable[[Request], Coroutine[Any, Any, Response]]:
    """An operation that takes no body refuses one (a 400 naming the body), but for an empty JSON object,
    which some clients send for a POST without one: a body it would ignore is a client's mistake (fields it
    meant to send, a malformed request) worth hearing about rather than a request executed as if it had
    none."""

    async def bodyless(request: Request) -> Response:
        if _has_body(request):
            raw = b""
            with contextlib.suppress(ClientDisconnect):
                raw = await request.body()
            media = _media_type(request.headers.get("content-type"))
            is_json = media == "application/json" or media.endswith("+json")
            if raw.strip() and is_json:
                json_body.check_charset(request.headers.get("content-type"))
            if raw.strip() and not (is_json and json_body.parse(raw) == {}):
                raise json_body.refused("body", "this operation takes no request body: send none")
        return await handler(request)

    return bodyless


def _segments(path: str) -> list[str]:
    return path.strip("/").split("/")


def _is_parameter(segment: str) -> bool:
    return segment.startswith("{") and segment.endswith("}")


def takes_requests_of(general: str, specific: str) -> bool:
    """Whether a route on path `general`, tried first, would take requests meant for one on `specific`: the
    two paths match a common request, and where they first differ in kind `general` has a parameter and
    `specific` a literal (`/customers/{customerId}` and `/customers/internal-accounts`). A `{name:path}`
    parameter takes the rest of the path."""
    first, second = _segments(general), _segments(specific)
    for index, (a, b) in enumerate(zip(first, second, strict=False)):
        if a.endswith(":path}") or b.endswith(":path}"):
            return a.endswith(":path}") and not b.endswith(":path}")
        if _is_parameter(a) != _is_parameter(b):
            return _is_parameter(a) and _overlap(first[index + 1 :], second[index + 1 :])
        if not _is_parameter(a) and a != b:
            return False  # two literals: no request matches both
    return False  # one shape: neither is more specific


def _overlap(first: list[str], second: list[str]) -> bool:
    """Whether the rest of two paths (past a position where they may both match) match a common request."""
    if len(first) != len(second):
        return bool(first and first[-1].endswith(":path}")) or bool(second and second[-1].endswith(":path}"))
    return all(_is_parameter(a) or _is_parameter(b) or a == b for a, b in zip(first, second, strict=True))


def by_specificity(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """The routes in the order the app tries them: their given order, except that a route goes before every
    route that would take its requests (`takes_requests_of`), however the domains list them. So no domain
    coordinates its routes' order with another's; the given order (the document's, kit/openapi.py) only
    decides which of two routes that never match the same request is tried first, which is all a request's
    cost depends on (the app tries routes one by one)."""
    return [routes[index] for index in _placement(tuple(getattr(route, "path", "") for route in routes))]


@cache
def _placement(paths: tuple[str, ...]) -> tuple[int, ...]:
    """`by_specificity`'s order of routes on these paths, as their indexes (every app of a process has the
    same routes: computed once)."""
    waits_for: list[set[int]] = [set() for _ in paths]
    for index, path in enumerate(paths):
        for other, other_path in enumerate(paths):
            if other != index and path != other_path and takes_requests_of(path, other_path):
                waits_for[index].add(other)
    ready = [index for index, waiting in enumerate(waits_for) if not waiting]
    heapq.heapify(ready)
    placed: list[int] = []
    while ready:
        index = heapq.heappop(ready)
        placed.append(index)
        for other, waiting in enumerate(waits_for):
            if index in waiting:
                waiting.discard(index)
                if not waiting:
                    heapq.heappush(ready, other)
    assert len(placed) == len(paths), "routes that would each take the other's requests"
    return tuple(placed)


def api_router(**kwargs: Any) -> APIRouter:
    """A domain's router: its routes carry the full path (base path included), so the app takes them as
    they are into one flat route list (see create_app)."""
    return APIRouter(prefix=BASE_PATH, route_class=ApiRoute, responses=dict(ERROR_RESPONSES), **kwargs)


def as_utc(value: datetime | None) -> datetime | None:
    """Query timestamps without an offset are taken as UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def _iso_datetime_only(value: Any) -> Any:
    # Pydantic would also take "0.5" or "1700000000" as Unix time; the documented format is ISO 8601.
    if isinstance(value, str) and not _ISO_DATETIME.match(value):
        # a parsing error, so details.errors names the format (kit/validation_errors.py)
        raise PydanticCustomError(
            "datetime_parsing", "must be an ISO 8601 timestamp, e.g. 2025-10-13T12:00:00Z"
        )
    return value


QueryTimestamp = Annotated[datetime, BeforeValidator(_iso_datetime_only), AfterValidator(as_utc)]
"""A timestamp query filter (`createdAfter=2025-10-13T12:00:00Z`): ISO 8601 only, returned in UTC."""


# ---- dispatch by the path's first two segments ---------------------------------------------------------

_ANY = object()  # a route whose segment at this position is not a literal: it may match any request's


def _route_key(route: BaseRoute) -> tuple[Any, Any]:
    """The first two segments a request must have for `route` to match it: literals, None for "the path has
    no second segment", or _ANY where the route's path has a parameter (or is not a plain route: a mount,
    anything else, is tried for every request, as before)."""
    if not _matches_by_path(route):
        return _ANY, _ANY
    segments = route.path_format.split("/")  # type: ignore[attr-defined]
    if len(segments) < 2 or segments[0] != "" or "{" in segments[1]:
        return _ANY, _ANY
    if len(segments) == 2:
        return segments[1], None
    return segments[1], (_ANY if "{" in segments[2] else segments[2])


def _request_key(path: str) -> tuple[str, str | None]:
    parts = path.split("/", 3)
    return parts[1], (parts[2] if len(parts) > 2 else None)


class RouteIndex:
    """The router's dispatch, without trying every route in turn: a request is matched against only the
    routes that can match its path's first two segments (`/2025-10-13/customers/...`: the customers
    routes, a dozen), in the router's order, by the same router code (FastAPI's `APIRouter.app`, run on a
    copy of the router holding only those routes). A route left out could not have matched the request,
    fully or partially, so the outcome is the full walk's: the first full match, else the first partial
    one (405), else 404; the same route precedence, path parameters, HEAD and the error bodies. Requests
    under a root path, and routers with middleware of their own, keep the full walk."""

    def __init__(self, router: APIRouter) -> None:
        self.router = router
        self._full = router.app
        self._built_for: tuple[int, int] | None = None
        self._views: dict[tuple[Any, Any], APIRouter] = {}
        self._everywhere: APIRouter = router

    def _view(self, routes: list[BaseRoute]) -> APIRouter:
        view = APIRouter.__new__(APIRouter)
        view.__dict__.update(self.router.__dict__)
        view.routes = routes
        return view

    def _build(self) -> None:
        routes = self.router.routes
        keys = [_route_key(route) for route in routes]
        firsts = {first for first, _ in keys if first is not _ANY}
        views: dict[tuple[Any, Any], APIRouter] = {}
        for first in firsts:
            seconds = {second for one, second in keys if one == first and second is not _ANY}
            for second in [*seconds, _ANY]:
                views[(first, second)] = self._view(
                    [
                        route
                        for route, (one, two) in zip(routes, keys, strict=True)
                        if one is _ANY or (one == first and (two is _ANY or two == second))
                    ]
                )
        self._views = views
        self._everywhere = self._view(
            [route for route, (one, _) in zip(routes, keys, strict=True) if one is _ANY]
        )
        self._built_for = (id(routes), len(routes))

    def candidates(self, path: str) -> list[BaseRoute]:
        """The routes a request on `path` is matched against, in order (for tests)."""
        return self._router_for(path).routes

    def _router_for(self, path: str) -> APIRouter:
        routes = self.router.routes
        if self._built_for != (id(routes), len(routes)):  # a route added since: index again
            self._build()
        first, second = _request_key(path)
        view = self._views.get((first, second)) or self._views.get((first, _ANY))
        return view if view is not None else self._everywhere

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or scope.get("root_path") or not path.startswith("/"):
            await self._full(scope, receive, send)
            return
        if "router" not in scope:
            scope["router"] = self.router  # url_for and the 405 handler see every route
        await self._router_for(path).app(scope, receive, send)


def index_routes(router: APIRouter) -> None:
    """Dispatch `router`'s requests through a RouteIndex (unless the router has middleware of its own)."""
    if router.middleware_stack == router.app:
        router.middleware_stack = RouteIndex(router)


def _matches_by_path(route: BaseRoute) -> bool:
    """Whether `route` matches a request by its path regex and method only: Starlette's and FastAPI's route
    classes, and ours that say so (`matches_by_path_only`: their `matches` only turns requests away
    sooner). Any other route is tried for every request."""
    if not isinstance(route, Route):
        return False
    owner = next(cls for cls in type(route).__mro__ if "matches" in cls.__dict__)
    return owner in (Route, APIRoute) or owner.__dict__.get("matches_by_path_only", False)
