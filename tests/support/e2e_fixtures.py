"""Fixtures for end-to-end tests, shared by tests/e2e and tests/install through their conftest.py: a process
manager that stops everything it started, and one fresh PostgreSQL database per test (created on the server
PLATPAY_TEST_DATABASE_URL points at, dropped after).

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


@pytest.fixture
def pg_database(pg_admin_dsn: str, processes: ProcessManager) -> Iterator[str]:
    """A fresh, empty database for this test only; its SQLAlchemy URL. Dropped after the test's processes
    are stopped."""
    assert PG_URL is not None
    name = f"platpay_e2e_{secrets.token_hex(6)}"
    admin = PgProbe(pg_admin_dsn)
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        yield (
            make_url(PG_URL)
            .set(drivername="postgresql+asyncpg", database=name)
            .render_as_string(hide_password=False)
        )
    finally:
        processes.stop_all()
        try:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            admin.close()


@pytest.fixture
def pg_probe(pg_database: str) -> Iterator[PgProbe]:
    probe = PgProbe(make_url(pg_database).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        yield probe
    finally:
        probe.close()
