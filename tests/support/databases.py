"""The databases the suite runs on: SQLite always, PostgreSQL too when PLATPAY_TEST_DATABASE_URL is set (under
pytest-xdist, one database per worker, named after it)."""

from __future__ import annotations

import os

from sqlalchemy.engine import make_url

PG_URL = os.environ.get("PLATPAY_TEST_DATABASE_URL")
if PG_URL and os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs pytest-xdist: a database per worker
    _parsed = make_url(PG_URL)
    PG_URL = _parsed.set(database=f"{_parsed.database}_{os.environ['PYTEST_XDIST_WORKER']}").render_as_string(
        hide_password=False
    )
BACKENDS = ["sqlite", "postgresql"] if PG_URL else ["sqlite"]
