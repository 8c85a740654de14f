"""Alembic environment: one script set for SQLite and PostgreSQL (batch mode for SQLite's ALTER limits)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import JSON, text
from sqlalchemy.engine import Connection

from platpay import domains
from platpay.config import get_settings
from platpay.db import migrate
from platpay.db.base import Base
from platpay.db.database import DEFAULT_TIMEOUT_SECONDS, WRITE_OPTION, build_engine

domains.load()  # every domain's tables in Base.metadata
target_metadata = Base.metadata


def _url() -> str:
    return context.config.get_main_option("sqlalchemy.url") or get_settings().database_url


def _render_item(type_: str, obj: object, autogen_context: AutogenContext) -> str | Literal[False]:
    """Render our JSON/JSONB variant by name instead of its repr."""
    if type_ == "type" and isinstance(obj, JSON):
        autogen_context.imports.add("import platpay.db.types")
        return "platpay.db.types.JsonType"
    return False


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        # platpay's SQLite connections BEGIN themselves (platpay.db.database), so DDL is transactional there
        # too: every pending migration runs in one transaction on both databases (Alembic would otherwise
        # commit after each migration on SQLite, letting a concurrent `migrate` start between two).
        transactional_ddl=True,
        target_metadata=target_metadata,
        render_as_batch=True,
        render_item=_render_item,
        compare_type=True,
        compare_server_default=False,
    )


def _run(connection: Connection) -> None:
    """On PostgreSQL every pending migration runs in the transaction the advisory lock's statement began:
    they commit together, or nothing of them does (a failing migration, a connection cut midway: the next
    run starts from the same revision, never from a half-applied one)."""
    if connection.dialect.name != "postgresql":
        # SQLite: the write transaction begins (BEGIN IMMEDIATE) before the revision is read and holds every
        # pending migration, so a second `migrate` waits for the first and then finds the schema at head.
        connection.execution_options(**{WRITE_OPTION: True})
        _configure(connection)
        migrate.check_known(context.get_context().get_current_heads())
        with context.begin_transaction():
            context.run_migrations()
        return
    # A transaction-scoped lock: it is released by the commit that makes the migrations visible (or by the
    # rollback), never before. A session lock released before that commit let a waiting `migrate` read the
    # revision the first had not committed yet and run the migrations again (CI: a second CREATE TABLE
    # alembic_version failed with DuplicateTableError).
    connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": migrate.MIGRATION_LOCK_ID})
    try:
        _configure(connection)
        # A database a newer platpay migrated is refused before anything runs (downgrades are unsupported).
        migrate.check_known(context.get_context().get_current_heads())
        with context.begin_transaction():
            context.run_migrations()
    except BaseException:
        # Roll back: a commit would keep what ran before the failure. The rollback also releases the lock
        # (as does the connection closing, when it is no longer usable).
        with contextlib.suppress(Exception):
            connection.rollback()
        raise
    connection.commit()


async def _run_async() -> None:
    url = _url()
    timeout = DEFAULT_TIMEOUT_SECONDS
    if url.startswith("sqlite"):
        # A second `migrate` waits in SQLite's busy wait while the first migrates: as long as a starting
        # command waits for its database, rather than failing and retrying every few seconds.
        timeout = max(get_settings().db_startup_timeout_seconds, DEFAULT_TIMEOUT_SECONDS)
    engine = build_engine(url, null_pool=True, timeout=timeout)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
    else:
        asyncio.run(_run_async())
