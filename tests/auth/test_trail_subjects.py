"""sessions_service.actions_for_subjects (the console trail of a customer and its verifications in one
statement), on both backends: newest first, only the subjects named, only the tenant's."""

from __future__ import annotations

from platpay.auth.sessions import service as sessions_service
from tests.factories import create_platform
from tests.support.console import console_client, signed_in
from tests.support.statements import count_statements


async def _console_session(app, db, credentials):
    async with console_client(app) as client:
        await signed_in(client, credentials)
        secret = client.cookies.get("platpay_console").partition(".")[2]
    found = await sessions_service.resolve(db, secret=secret)
    assert found is not None
    return found


async def test_actions_of_several_subjects_newest_first_in_one_statement(app, db, settings, auth) -> None:
    ours = await _console_session(app, db, auth)
    other = await create_platform(db, settings)
    theirs = await _console_session(app, db, other["sandbox"])
    async with db.transaction() as session:
        for index, subject in enumerate(("Customer:a", "Verification:b", "Customer:c", "Verification:b")):
            await sessions_service.record_action(
                session, console=ours, action=f"A{index}", subject_type="x", subject_id=subject
            )
        await sessions_service.record_action(
            session, console=theirs, action="THEIRS", subject_type="x", subject_id="Customer:a"
        )
    async with db.read() as session:
        with count_statements(db) as statements:
            found = await sessions_service.actions_for_subjects(
                session, tenant_id=ours.principal.tenant.id, subject_ids=["Customer:a", "Verification:b"]
            )
        assert statements.count == 1
        assert [row.action for row in found] == ["A3", "A1", "A0"]
        limited = await sessions_service.actions_for_subjects(
            session, tenant_id=ours.principal.tenant.id, subject_ids=["Customer:a", "Verification:b"], limit=2
        )
        assert [row.action for row in limited] == ["A3", "A1"]
        with count_statements(db) as statements:
            assert (
                await sessions_service.actions_for_subjects(
                    session, tenant_id=ours.principal.tenant.id, subject_ids=[]
                )
                == []
            )
        assert statements.count == 0
