"""The idempotency mechanism itself, below the endpoints that use it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st
from sqlalchemy import text
from starlette.requests import Request

from platpay.events.models import EventRow
from platpay.kit import clock, idempotency
from platpay.kit.ids import new_id
from tests.factories import create_platform


async def _tenant_id(db, settings) -> str:
    await create_platform(db, settings)
    async with db.read() as session:
        return (await session.execute(text("SELECT id FROM tenants LIMIT 1"))).scalar_one()


async def _count(db, table: str) -> int:
    async with db.read() as session:
        return (await session.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one()


class TestADuplicateThatCommitsFirst:
    async def test_loses_nothing_and_replays_the_duplicates_answer(self, db, settings, backend):
        """PostgreSQL reads the key and takes its lock in one statement, whose snapshot can predate a
        duplicate's commit: the request then runs, fails to store the key, rolls its effect back and
        replays the duplicate's answer. Here the duplicate commits from inside the operation."""
        if backend != "postgresql":
            pytest.skip("SQLite has one writer: a duplicate cannot commit while this request writes")
        tenant_id = await _tenant_id(db, settings)
        fingerprint = idempotency.fingerprint("POST", "/things", {"n": 1})
        runs = []

        async def operation(session):
            runs.append(1)
            session.add(
                EventRow(
                    id=new_id("Event"), tenant_id=tenant_id, type="TEST", data={}, created_at=clock.now()
                )
            )
            if len(runs) == 1:  # the duplicate wins the race: its effect and answer are committed now
                async with db.transaction() as other:
                    await idempotency._store(
                        other,
                        tenant_id=tenant_id,
                        key="k",
                        fingerprint=fingerprint,
                        status=201,
                        body=b'{"who":"dup"}',
                        settings=settings,
                    )
            return 201, {"who": "me"}

        response = await idempotency.execute(
            db,
            tenant_id=tenant_id,
            key="k",
            request_fingerprint=fingerprint,
            operation=operation,
            settings=settings,
        )
        assert response.status_code == 201 and response.body == b'{"who":"dup"}'
        assert response.headers["Idempotent-Replayed"] == "true"
        assert runs == [1]  # the second pass found the stored answer and did not run the operation again
        assert await _count(db, "events") == 0  # this request's effect was rolled back
        assert await _count(db, "idempotency_keys") == 1


@examples(max_examples=300, deadline=None)
@given(
    # plain characters mixed with those the URL changes or drops (?, #, \\, %, tab, newline, a leading //)
    st.text(alphabet=st.sampled_from("ab/-_.~:%?#\\\t\n é"), max_size=24)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=24)
    | st.sampled_from(["/transfer-out", "//x"])
)
def test_the_fingerprints_path_is_the_urls(raw):
    """A fingerprint holds `request.url.path`, which the idempotency layer reads without building the URL for
    a plain path: the same string either way, or a replay after an upgrade would be a different request."""
    path = raw if raw.startswith("/") else "/" + raw
    scope = {"type": "http", "path": path, "headers": [(b"host", b"127.0.0.1:8000")], "scheme": "http",
             "server": ("127.0.0.1", 8000), "query_string": b"a=1"}  # fmt: skip
    request = Request(scope)
    assert idempotency._path(request) == request.url.path
