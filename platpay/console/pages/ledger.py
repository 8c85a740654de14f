"""The console's ledger: the tenant's ledger accounts with their balances (available, held) per currency, one
account's statement with its running balance, and the ledger's check (`platpay ledger verify`) run over the
tenant's rows."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import Response

from platpay.accounts import service as accounts_service
from platpay.auth.schemas import Permission
from platpay.auth.sessions import service as sessions_service
from platpay.console import web
from platpay.ledger import service as ledger_service
from platpay.ledger.state import LedgerAccountKind

router = web.console_router()

KINDS = tuple(kind.value for kind in LedgerAccountKind)
VERIFIED = "LEDGER_VERIFIED"
_MAX_ID = 64


def _filters(request: Request) -> tuple[str | None, str | None]:
    return web.query_choice(request, "kind", KINDS), web.query_text(request, "owner", max_length=_MAX_ID)


@router.get("/ledger")
async def ledger(request: Request, console: web.Console = web.SignedIn) -> Response:
    kind, owner = _filters(request)
    params = web.page_params(request)
    tenant = console.principal.tenant
    account_ids = None
    if owner is not None:
        # An owner is a customer of the tenant, or the platform itself (its id, as GET /transactions' filter).
        account_ids = accounts_service.internal_account_ids_of(
            tenant_id=tenant.id, customer_id=None if owner == tenant.platform_id else owner
        )
    async with console.db.read() as session:
        page = await ledger_service.list_accounts_with_balances(
            session, tenant_id=tenant.id, params=params, kind=kind, account_ids=account_ids
        )
        internal = [a.id for a in page.items if a.kind == LedgerAccountKind.INTERNAL]
        owners = (
            await accounts_service.owners_of(session, tenant_id=tenant.id, account_ids=internal)
            if internal
            else {}
        )
        checks = await sessions_service.actions_for(session, tenant_id=tenant.id, subject_id=tenant.id)
    last_check = next((c for c in checks if c.action == VERIFIED), None)
    return web.render(
        console,
        "ledger/list.html",
        request=request,
        title="Ledger",
        accounts=page.items,
        owners=owners,
        kinds=KINDS,
        kind=kind,
        owner=owner,
        platform_id=tenant.platform_id,
        next_url=web.next_page_url(request, page),
        last_check=last_check,
        checks=[c for c in checks if c.action == VERIFIED],
    )


@router.get("/ledger/accounts/{account_id}")
async def account(request: Request, account_id: str, console: web.Console = web.SignedIn) -> Response:
    params = web.page_params(request)
    tenant = console.principal.tenant
    async with console.db.read() as session:
        found = await ledger_service.account_with_balance(
            session, tenant_id=tenant.id, ledger_account_id=account_id
        )
        page = await ledger_service.account_statement(
            session, tenant_id=tenant.id, ledger_account_id=found.id, params=params
        )
        owners = (
            await accounts_service.owners_of(session, tenant_id=tenant.id, account_ids=[found.id])
            if found.kind == LedgerAccountKind.INTERNAL
            else {}
        )
    return web.render(
        console,
        "ledger/account.html",
        request=request,
        title=f"Ledger account {found.code}",
        account=found,
        owner=owners.get(found.id),
        is_internal=found.id in owners,
        lines=page.items,
        next_url=web.next_page_url(request, page),
    )


def _summary(report: ledger_service.VerifyReport) -> dict[str, Any]:
    """What the console shows and records of a check: the counts, the trial balance per currency (zero when
    balanced) and each kind of problem with how many were found."""
    problems = {
        "balanceMismatches": len(report.balance_mismatches),
        "unbalancedEntries": len(report.unbalanced_entries),
        "thinEntries": len(report.thin_entries),
        "nonzeroTrialBalances": len(report.nonzero_trial_balances),
        "negativeAccounts": len(report.negative_accounts),
        "foreignPostings": len(report.foreign_postings),
        "holdMismatches": len(report.hold_mismatches),
        "heldBelowHolds": len(report.held_below_holds),
    }
    return {
        "ok": report.ok,
        "accounts": report.counts["accounts"],
        "entries": report.counts["entries"],
        "postings": report.counts["postings"],
        "currencies": {t["currency"]: t["total"] for t in report.trial_balances},
        "problems": {name: count for name, count in problems.items() if count},
    }


@router.post("/ledger/verify")
async def verify(request: Request, console: web.Console = web.SignedIn) -> Response:
    """The ledger's check over the tenant's rows (reads only; a form since it may take a while). Running it
    twice is harmless: each run records its own result."""
    await web.form_of(console, permission=Permission.VIEW)
    tenant_id = console.tenant_id
    async with console.db.read() as session:  # a long read holds no write lock (SQLite has one writer)
        summary = _summary(await ledger_service.verify(session, tenant_id=tenant_id))
    async with console.db.transaction() as session:
        await console.record(
            session,
            action=VERIFIED,
            subject_type="ledger",
            subject_id=tenant_id,
            ok=summary["ok"],
            accounts=summary["accounts"],
            entries=summary["entries"],
            postings=summary["postings"],
            currencies=summary["currencies"],
            problems=summary["problems"],
        )
    return web.redirect("/console/ledger#verify-heading")
