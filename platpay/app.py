"""create_app(settings): middleware, error handlers, routers, operations endpoints and the lifespan that
runs the embedded job runner."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from platpay import API_VERSION, domains, package_version
from platpay import metrics as metrics_module
from platpay.config import Settings, get_settings
from platpay.db import migrate
from platpay.db.database import Database
from platpay.db.faults import DatabaseUnavailable, unavailable_reason
from platpay.errors import ApiError, InternalError
from platpay.events import repository as events_repository
from platpay.events.delivery import close_clients
from platpay.jobs import repository as jobs_repository
from platpay.jobs.runner import JobRunner
from platpay.kit import clock, openapi
from platpay.kit.routing import by_specificity, documented_error, index_routes
from platpay.kit.validation_errors import error_entry
from platpay.logging import configure as configure_logging
from platpay.middleware import EdgeMiddleware

log = structlog.get_logger("platpay.app")

_STATUS_CODES = {
    400: "INVALID_INPUT",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMITED",
}


def _error_response(
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        {"status": status, "code": code, "message": message, "details": details or {}},
        status_code=status,
        headers=headers,
    )


def _field_name(loc: tuple[Any, ...]) -> tuple[str, str]:
    location = str(loc[0]) if loc else "body"
    parts = [str(part) for part in loc[1:]]
    if location == "body" and parts and parts[0].isdigit() and len(loc) == 2:
        parts = []  # json_invalid reports a character offset, not a field
    return (".".join(parts) or location), location


def _clean(message: str) -> str:
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
    fields = []
    errors = []  # the reference's FieldError beside each entry of fields (kit/validation_errors.py)
    for error in exc.errors():
        field, location = _field_name(tuple(error.get("loc", ())))
        kind = error.get("type", "")
        if kind == "json_invalid":
            message = f"request body is not valid JSON: {error.get('ctx', {}).get('error', 'parse error')}"
        elif kind == "missing" and field == "body":
            message = "a JSON request body is required"
        elif kind == "model_attributes_type" and field == "body":
            message = "the request body must be a JSON object"
        else:
            message = _clean(str(error.get("msg", "invalid")))
        fields.append({"field": field, "location": location, "message": message})
        errors.append(error_entry(error, field=field, location=location, message=message, body=exc.body))
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
    details = {"fields": fields, "errors": errors}
    return _error_response(400, "INVALID_INPUT", f"invalid input: {summary}", details)


async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers or None)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    status = exc.status_code
    code = _STATUS_CODES.get(status, "INVALID_INPUT" if 400 <= status < 500 else "INTERNAL_ERROR")
    if status == 404:
        message = f"no such endpoint: {request.method} {request.url.path}"
    elif status == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    elif status == 401:
        message = "malformed Authorization header: use HTTP Basic with clientId:clientSecret"
    else:
        message = str(exc.detail)
    headers = dict(exc.headers or {})
    if status == 401:
        headers["WWW-Authenticate"] = 'Basic realm="platpay"'
    elif status == 405:
        headers["Allow"] = ", ".join(_allowed_methods(request))
    return _error_response(status, code, message, headers=headers or None)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_methods(request: Request) -> list[str]:
    """Every method the path serves (each method is its own route; Starlette's 405 names only the first)."""
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes)
    ]


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    reason = unavailable_reason(exc)
    if reason is not None:  # an outage that reached us outside the database layer's own conversion
        return await _api_error(request, request.app.state.db.outage.failed(exc, reason))
    log.error("request.unhandled", path=request.url.path, error=repr(exc), exc_info=exc)
    error = InternalError("internal error; the request id identifies it in our logs")
    return JSONResponse(error.body(), status_code=500)


# SQLSTATEs for client text the database cannot hold (PostgreSQL refuses NUL characters): a 400, not a 500.
_UNSTORABLE_TEXT = {"22021", "22P05"}


async def _database_error(request: Request, exc: DBAPIError) -> JSONResponse:
    if getattr(exc.orig, "sqlstate", None) in _UNSTORABLE_TEXT:
        message = "the request holds text that cannot be stored (a NUL character)"
        return _error_response(400, "INVALID_INPUT", message)
    return await _unexpected(request, exc)


def create_app(
    settings: Settings | None = None, *, database: Database | None = None, embedded_worker: bool | None = None
) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(settings.log_level, json_output=settings.log_json)
    domains.start(settings)
    run_worker = settings.run_embedded_worker if embedded_worker is None else embedded_worker
    app_metrics = metrics_module.metrics_for_app()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app_metrics.processes.labels("server").set(1)
        own_db = database is None
        db = database or Database.from_settings(settings)
        app.state.db = db
        runner_task = None
        runner = None
        if run_worker:
            runner = JobRunner(db, settings, name="embedded")
            app.state.runner = runner
            runner_task = asyncio.create_task(runner.run_forever())
        try:
            yield
        finally:
            if runner is not None and runner_task is not None:
                runner.stop()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(runner_task, timeout=settings.job_lease_seconds)
            await close_clients()
            if own_db:
                await db.dispose()
            app_metrics.requests.flush()  # the last requests' tally
            app_metrics.processes.labels("server").set(0)
            metrics_module.process_exiting()

    app = FastAPI(
        title="platpay",
        version=API_VERSION,
        lifespan=lifespan,
        openapi_url="/openapi.json",
        docs_url=None,  # served below, from local assets
        redoc_url=None,
        # A path with a trailing slash is an unknown route (404), never a 307 to the path without it:
        # behind a proxy that redirect named another host, and clients drop Authorization on a redirect.
        redirect_slashes=False,
        # FastAPI's OpenTelemetry bridge looks up the global providers on every request even when none
        # is configured; platpay's own metrics are Prometheus (/metrics).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.metrics = app_metrics
    if database is not None:
        app.state.db = database

    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(DBAPIError, _database_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)

    # The routes themselves, not include_router: an included router is matched through per-candidate
    # wrappers that cost several times a plain route's regex match on every request, for every route
    # tried before the matching one (measured: ~70% of an unauthenticated request's CPU).
    # In the document's order (the order requests have always been matched in: the routes tried first are
    # the cheapest to reach), a route moved before any that would take its requests (kit/routing.py), so
    # that no domain orders its routes against another's.
    served = [route for mount in domains.mounts() for route in mount.router.routes]
    app.router.routes.extend(by_specificity(openapi.documented_order(served)))

    @app.get(
        "/healthz", tags=["Operations"], operation_id="getHealth", responses={500: documented_error(500)}
    )
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers, with platpay's version."""
        return {"status": "ok", "version": package_version()}

    @app.get(
        "/readyz", tags=["Operations"], operation_id="getReadiness", responses={503: documented_error(503)}
    )
    async def readyz(request: Request) -> Response:
        """Readiness: the database answers and its schema is at the latest migration. While this process's
        last write was refused by a database that still reads (read-only, disk full): 200 "degraded"."""
        db: Database = request.app.state.db
        try:
            async with db.read() as session:
                await session.execute(text("SELECT 1"))
                current = await migrate.current_revision(session)
        except DatabaseUnavailable as error:
            return await _api_error(request, error)
        except Exception as error:
            return await _api_error(request, DatabaseUnavailable(f"{type(error).__name__}: {error}"[:300]))
        head = migrate.head_revision()
        if current != head:
            if current is not None and current not in migrate.known_revisions():
                message = migrate.newer_schema_message(current)  # a newer platpay migrated it
            else:
                message = f"database schema is at {current}, expected {head}: run `platpay migrate`"
            return _error_response(
                503,
                "SERVICE_UNAVAILABLE",
                message,
                {"dependency": "database", "current": current, "head": head, "version": package_version()},
            )
        refused = db.outage.writes_refused
        if refused is not None:
            # Reads are served: still ready (a 503 would take every process sharing the database out of
            # its load balancer, reads too), but degraded, until a write succeeds again.
            return JSONResponse(
                {
                    "status": "degraded",
                    "migration": current,
                    "details": {"dependency": "database", "reason": refused, "writes": "refused"},
                }
            )
        return JSONResponse({"status": "ready", "migration": current})

    @app.get(
        "/metrics",
        tags=["Operations"],
        operation_id="getMetrics",
        response_class=Response,
        responses={
            200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
            500: documented_error(500),
        },
    )
    async def metrics(request: Request) -> Response:
        """Prometheus metrics."""
        db: Database = request.app.state.db
        async with db.read() as session:
            stats = await jobs_repository.queue_stats(session, now=clock.now())
            deliveries = await events_repository.delivery_counts(session)
            endpoints = await events_repository.endpoint_counts(session)
        from_database = metrics_module.database_families(
            jobs_by_state=stats["by_state"],
            oldest_due_age_seconds_by_lane=stats["oldest_due_age_seconds_by_lane"],
            deliveries_by_status=deliveries,
            endpoints_by_status=endpoints,
        )
        scrape = metrics_module.Scrape(request.app.state.metrics, from_database)
        return Response(generate_latest(scrape), media_type=CONTENT_TYPE_LATEST)

    _serve_docs(app)
    # Every request is matched against the routes sharing its path's first two segments only, not all of
    # them in turn (kit/routing.py RouteIndex): same outcome, without a walk of ~190 routes for a late one.
    index_routes(app.router)
    app.openapi = lambda: openapi.document(app, error_codes=domains.error_codes())  # type: ignore[method-assign]
    app.add_middleware(
        EdgeMiddleware, max_body_bytes=settings.max_body_bytes, body_limits=domains.body_limits(settings)
    )
    if metrics_module.multiprocess_dir() is None:
        # Apps side by side in one process each record to their own set (outermost, so that the edge
        # middleware's request metrics and the lifespan's job runner record there too). In multiprocess
        # mode a process holds one app and one set: no layer needed.
        app.add_middleware(MetricsScope, metrics=app_metrics)
    return app


DOCS_ASSETS = "/docs/assets"


def _serve_docs(app: FastAPI) -> None:
    """/docs: Swagger UI from the swagger-ui-bundle package, not a CDN, so a sandbox on a machine without
    internet access (or behind a strict proxy) still shows its documentation."""
    import swagger_ui_bundle
    from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
    from starlette.staticfiles import StaticFiles

    app.mount(DOCS_ASSETS, StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="platpay API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
            oauth2_redirect_url="/docs/oauth2-redirect",
        )

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    async def docs_oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()


class MetricsScope:
    """Pure ASGI: binds the app's metrics for every request and for the lifespan."""

    def __init__(self, app: Any, *, metrics: metrics_module.Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        token = metrics_module.bind(self.metrics)
        try:
            await self.app(scope, receive, send)
        finally:
            metrics_module.unbind(token)


def freeze_startup_objects() -> None:
    """Take everything built at startup (modules, routes, schemas: it lives as long as the process) out of
    the cyclic garbage collector's reach, so that a full collection under load scans only request garbage
    instead of stalling every in-flight request (~70-120 ms -> ~15 ms per full collection on a 2-vCPU box)."""
    gc.collect()
    gc.freeze()


def factory() -> FastAPI:
    """Entry point for `uvicorn --factory` with several worker processes."""
    app = create_app()
    freeze_startup_objects()
    return app
