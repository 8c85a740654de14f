"""The end-to-end fixtures (a process manager, a fresh PostgreSQL database per test, one master key) for the
tests of platpay as something people install."""

from tests.support.e2e_fixtures import (  # noqa: F401 (fixtures and the hook that keeps a failed test's outcome)
    _e2e_databases,
    master_key,
    pg_admin_dsn,
    pg_database,
    processes,
    pytest_runtest_makereport,
)
