"""The check every test that touches the database ends with: the ledger verifies (platpay ledger verify)."""

from __future__ import annotations

from platpay.db.database import Database


async def assert_ledger_verifies(database: Database) -> None:
    from platpay.ledger import service as ledger_service

    async with database.read() as session:
        report = await ledger_service.verify(session)
    assert report.ok, "\n".join(report.lines())
