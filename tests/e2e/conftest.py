"""The end-to-end fixtures (tests/support/e2e_fixtures.py): a process manager that stops everything it
started, one master key, a fresh PostgreSQL database per test and a probe into it."""

from tests.support.e2e_fixtures import (  # noqa: F401 (fixtures and the hook that keeps a failed test's outcome)
    _e2e_databases,
    master_key,
    pg_admin_dsn,
    pg_database,
    pg_probe,
    processes,
    pytest_runtest_makereport,
)
