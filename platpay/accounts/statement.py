"""An internal account's statement (GET /internal-accounts/{id}/entries): every ledger movement of its
balance, whatever moved it (payments, card authorizations and clearings, agent reservations, sandbox
funding), one item per journal entry, newest first. The accounts domain says which accounts the tenant has;
the ledger says what moved them (ledger.service.account_entries)."""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.schemas import InternalAccountEntry
from platpay.errors import invalid_field
from platpay.kit.ids import is_id
from platpay.kit.money import currency_amount
from platpay.kit.pagination import PageParams, PageResult
from platpay.ledger import service as ledger_service
from platpay.ledger.service import AccountEntry

KIND_PATTERN = re.compile(r"[A-Z][A-Z0-9_]{0,39}")
MAX_KINDS = 20
# A reference names the business object an entry belongs to by its id (`<Type>:<uuid>`); these types are
# linked in the statement.
TRANSACTION, CARD_TRANSACTION = "Transaction", "CardTransaction"


async def list_entries(
    session: AsyncSession,
    *,
    tenant_id: str,
    account_id: str,
    params: PageParams,
    kinds: list[str] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> tuple[PageResult[AccountEntry], list[InternalAccountEntry]]:
    """A page of the account's statement: 400 for a malformed id or filter, 404 when the tenant has no such
    internal account (another tenant's included)."""
    if not is_id(account_id, "InternalAccount"):
        raise invalid_field("id", "must be an internal account id (InternalAccount:<uuid>)", location="path")
    for kind in kinds or []:
        if not KIND_PATTERN.fullmatch(kind):
            raise invalid_field(
                "kind", f"{kind[:60]!r} is not an entry kind (e.g. CARD_AUTHORIZATION_HOLD)", location="query"
            )
    if kinds and len(kinds) > MAX_KINDS:
        raise invalid_field("kind", f"at most {MAX_KINDS} kinds", location="query")
    if start is not None and end is not None and start > end:
        raise invalid_field("startDate", "must not be after endDate", location="query")
    account = await accounts_service.read_internal(session, tenant_id=tenant_id, account_id=account_id)
    page = await ledger_service.account_entries(
        session,
        tenant_id=tenant_id,
        account_id=account.id,
        params=params,
        kinds=kinds,
        start=start,
        end=end,
    )
    return page, [render(entry, currency=account.currency) for entry in page.items]


def _linked(reference: str | None, type_name: str) -> str | None:
    return reference if reference is not None and is_id(reference, type_name) else None


def render(entry: AccountEntry, *, currency: str) -> InternalAccountEntry:
    return InternalAccountEntry(
        id=entry.id,
        kind=entry.kind,
        available_change=currency_amount(entry.available_change, currency),
        held_change=currency_amount(entry.held_change, currency),
        total_change=currency_amount(entry.total_change, currency),
        available_after=currency_amount(entry.available_after, currency),
        total_after=currency_amount(entry.total_after, currency),
        transaction_id=_linked(entry.reference, TRANSACTION),
        card_transaction_id=_linked(entry.reference, CARD_TRANSACTION),
        reference=entry.reference,
        created_at=entry.created_at,
    )
