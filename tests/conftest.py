"""Test fixtures: real SQLite always, real PostgreSQL when PLATPAY_TEST_DATABASE_URL is set.

SQLite: the schema is migrated once into a template file that each test copies. PostgreSQL: one database
migrated per session, every table emptied before each test. Every DB test runs on each backend.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from sqlalchemy.engine import make_url

os.environ.setdefault("PLATPAY_MASTER_KEY", base64.urlsafe_b64encode(b"k" * 32).rstrip(b"=").decode())
os.environ.setdefault("PLATPAY_LOG_JSON", "true")

from platpay import BASE_PATH, domains
from platpay.app import create_app
from platpay.config import Settings, get_settings
from platpay.db import migrate
from platpay.db.database import Database
from platpay.jobs.runner import JobRunner
from platpay.kit import clock
from tests.factories import create_platform
from tests.support.databases import BACKENDS, PG_URL
from tests.support.field_errors import assert_field_errors_match, sent_json
from tests.support.ledger import assert_ledger_verifies
from tests.support.receiver import WebhookReceiver
from tests.support.smtp import smtp_server  # noqa: F401  (the fixture, for every test module)

# The suite runs on shared 2-core machines beside other suites: a draw that takes a second there is the
# machine, not the strategy (a pure-function property failed CI on "only 6 inputs in 1.84 s"). Timing is
# never what a property checks here, so neither the per-example deadline nor the too-slow check applies.
hypothesis_settings.register_profile("platpay", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("platpay")


@pytest.hookimpl(trylast=True)  # after any plugin's own order (a shuffling plugin's, if one is installed)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow modules first: those that start processes or clusters (marked e2e) and drive a browser. `make
    test` hands whole modules to its workers in this order (`--dist loadfile --no-loadscope-reorder`): left
    for last, one of them (a failover, a crash campaign: 30-75 s) kept one worker busy minutes after the
    other ran out of work. The others follow, the modules with the most tests first (pytest-xdist's own
    order)."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def slow(path: str) -> bool:
        return path.endswith("_browser.py") or any(item.get_closest_marker("e2e") for item in modules[path])

    order = sorted(modules, key=lambda path: (not slow(path), 0 if slow(path) else -len(modules[path])))
    items[:] = [item for path in order for item in modules[path]]


def _pg_admin_url(url: str) -> tuple[str, str]:
    parsed = make_url(url)
    return parsed.set(database="postgres").render_as_string(
        hide_password=False
    ), parsed.database or "platpay_test"


async def _pg_recreate(url: str) -> None:
    import asyncpg

    admin, name = _pg_admin_url(url)
    dsn = admin.replace("postgresql+asyncpg", "postgresql")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def pg_database() -> str | None:
    if not PG_URL:
        if os.environ.get("PLATPAY_TEST_REQUIRE_POSTGRES"):
            pytest.fail("PLATPAY_TEST_REQUIRE_POSTGRES is set but PLATPAY_TEST_DATABASE_URL is not")
        return None
    try:
        asyncio.run(_pg_recreate(PG_URL))
    except Exception as error:
        pytest.fail(f"PostgreSQL at {PG_URL} is unreachable: {error!r}")
    migrate.upgrade(PG_URL)
    return PG_URL


async def _empty_all_tables(db: Database) -> None:
    """Every table emptied: the tables that have rows, DELETEd children first (the reverse of the foreign
    keys' order), in one transaction. Not TRUNCATE: it gives every table and index a new file, which costs
    the suite 0.3 to 3 s per test whatever the tables hold (measured: TRUNCATE of the 53 empty tables 1.0 to
    3.0 s on a loaded machine, the same DELETEs 0.05 s); a test leaves a few rows in a few tables."""
    from sqlalchemy import text

    from platpay.db.base import Base

    domains.load()
    tables = Base.metadata.sorted_tables
    exists = ", ".join(f'EXISTS (SELECT 1 FROM "{table.name}")' for table in tables)
    async with db.transaction() as session:
        has_rows = (await session.execute(text(f"SELECT {exists}"))).one()
        for table, filled in reversed(list(zip(tables, has_rows, strict=True))):
            if filled:
                await session.execute(text(f'DELETE FROM "{table.name}"'))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def database_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if backend == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        target = tmp_path / "platpay.db"
        shutil.copyfile(template, target)
        return f"sqlite+aiosqlite:///{target}"
    url = request.getfixturevalue("pg_database")
    assert url is not None
    return url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return get_settings().model_copy(
        update={
            "database_url": database_url,
            "var_dir": tmp_path / "var",
            "webhook_retry_base_seconds": 0.05,
            "webhook_timeout_seconds": 3.0,
            "job_lease_seconds": 5.0,
            "job_poll_seconds": 0.05,
            "run_embedded_worker": False,
        }
    )


@pytest.fixture
async def db(settings: Settings, backend: str) -> AsyncIterator[Database]:
    # (credentials kept as a served process keeps them: platpay.db.watch)
    database = Database(settings.database_url, pool_size=5, watch_max_age=settings.credential_cache_seconds)
    if backend == "postgresql":
        await _empty_all_tables(database)
    domains.start(settings)
    try:
        yield database
        await assert_ledger_verifies(database)  # every test that touched the database ends with this
    finally:
        await database.dispose()


@pytest.fixture(scope="session", autouse=True)
def _started() -> None:
    """The process's startup (domains.start: provider slots, the master key) for the tests that use no
    `db` fixture; `db` starts them again with its test's settings."""
    domains.start(get_settings())


@pytest.fixture(autouse=True)
def _reset_clock() -> Iterator[None]:
    clock.reset()
    yield
    clock.reset()


@pytest.fixture
async def app(settings: Settings, db: Database) -> Any:
    return create_app(settings, database=db, embedded_worker=False)


async def check_field_errors(response: httpx.Response) -> None:
    """Every 400 a test receives names its bad fields in details.errors as in details.fields."""
    if response.status_code != 400 or not response.headers.get("content-type", "").startswith(
        "application/json"
    ):
        return
    await response.aread()
    try:
        sent = sent_json(response.request.content)
    except httpx.RequestNotRead:  # a streamed upload
        sent = None
    assert_field_errors_match(response.json(), sent=sent)


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(
        transport=transport,
        base_url=f"http://testserver{BASE_PATH}",
        event_hooks={"response": [check_field_errors]},
    ) as c:
        yield c


@pytest.fixture
async def runner(db: Database, settings: Settings) -> AsyncIterator[JobRunner]:
    from platpay.events.delivery import close_clients

    yield JobRunner(db, settings, name="test")
    await close_clients()


@pytest.fixture
async def platform(db: Database, settings: Settings) -> dict[str, Any]:
    return await create_platform(db, settings)


@pytest.fixture
def auth(platform: dict[str, Any]) -> tuple[str, str]:
    """Sandbox credentials (clientId, clientSecret) of the test platform."""
    return platform["sandbox"]


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    r = WebhookReceiver().start()
    yield r
    r.stop()
