"""Fixtures for end-to-end tests, shared by tests/e2e and tests/install through their conftest.py: a process
manager that stops everything it started, and one fresh PostgreSQL database per test (created on the server
PLATPAY_TEST_DATABASE_URL points at, dropped when the session ends).

PostgreSQL tests skip when PLATPAY_TEST_DATABASE_URL is unset, and fail instead when
PLATPAY_TEST_REQUIRE_POSTGRES is set or the server it names is unreachable.
"""

from __future__ import annotations

import base64
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from tests.support.pg import PgProbe
from tests.support.processes import ProcessManager

PG_URL = os.environ.get("PLATPAY_TEST_DATABASE_URL")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def processes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ProcessManager]:
    manager = ProcessManager(tmp_path / "logs")
    try:
        yield manager
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(manager.describe_all())  # shown under "Captured stdout teardown"
        manager.stop_all()


@pytest.fixture
def master_key() -> str:
    """One key for every process of a test: each must open what another sealed."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def _admin_dsn(url: str) -> str:
    parsed = make_url(url).set(drivername="postgresql", database="postgres")
    return parsed.render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def pg_admin_dsn() -> str:
    if not PG_URL:
        if os.environ.get("PLATPAY_TEST_REQUIRE_POSTGRES"):
            pytest.fail("PLATPAY_TEST_REQUIRE_POSTGRES is set but PLATPAY_TEST_DATABASE_URL is not")
        pytest.skip("PostgreSQL e2e tests need PLATPAY_TEST_DATABASE_URL")
    dsn = _admin_dsn(PG_URL)
    try:
        probe = PgProbe(dsn)
        probe.close()
    except Exception as error:
        pytest.fail(f"PostgreSQL at {make_url(PG_URL).render_as_string()} is unreachable: {error!r}")
    return dsn


@pytest.fixture(scope="session")
def _e2e_databases(pg_admin_dsn: str) -> Iterator[list[str]]:
    """The databases this process's tests created, dropped when the session ends: DROP DATABASE forces a
    checkpoint (PostgreSQL 15 flushes every dirty buffer of the server and waits), 1 to 38 s measured on a
    loaded machine where CREATE took 0.2 to 0.6 s; one after another at the end, every checkpoint but the
    first finds almost nothing to write."""
    names: list[str] = []
    yield names
    admin = PgProbe(pg_admin_dsn)
    try:
        for name in names:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.close()


@pytest.fixture
def pg_database(pg_admin_dsn: str, processes: ProcessManager, _e2e_databases: list[str]) -> Iterator[str]:
    """A fresh, empty database for this test only; its SQLAlchemy URL. Its connections are closed once the
    test's processes are stopped; the database is dropped at the end of the session (`_e2e_databases`)."""
    assert PG_URL is not None
    name = f"platpay_e2e_{secrets.token_hex(6)}"
    admin = PgProbe(pg_admin_dsn)
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        _e2e_databases.append(name)
        yield (
            make_url(PG_URL)
            .set(drivername="postgresql+asyncpg", database=name)
            .render_as_string(hide_password=False)
        )
    finally:
        processes.stop_all()
        try:
            # Nothing of this test stays connected to it (a probe the test left open, a process's leftover).
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                name,
            )
        finally:
            admin.close()


@pytest.fixture
def pg_probe(pg_database: str) -> Iterator[PgProbe]:
    probe = PgProbe(make_url(pg_database).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        yield probe
    finally:
        probe.close()
