"""One Alembic script set upgrades an empty SQLite and an empty PostgreSQL to exactly the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from platpay import domains
from platpay.db import migrate
from platpay.db.base import Base


async def test_migrated_schema_matches_the_models(db):
    domains.load()

    def diff(connection):
        context = MigrationContext.configure(connection, opts={"compare_type": True, "render_as_batch": True})
        return compare_metadata(context, Base.metadata)

    async with db.engine.connect() as connection:
        differences = await connection.run_sync(diff)
    assert differences == []


async def test_database_is_at_head(db):
    async with db.read() as session:
        assert await migrate.current_revision(session) == migrate.head_revision()
