"""All SQL on the cards domain's tables; every query is tenant-scoped."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from sqlalchemy import (
    Select,
    bindparam,
    delete,
    exists,
    insert,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.cards.models import (
    CardFundingSourceRow,
    CardRefundRow,
    CardRevealRow,
    CardRow,
    CardTransactionRow,
)
from platpay.customers import service as customers_service
from platpay.db import lean
from platpay.db.lean import Lean
from platpay.db.rows import get_scoped
from platpay.db.unit_of_work import LeanSession
from platpay.kit.pagination import keyset_page
from platpay.ledger import service as ledger_service

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


async def insert_card(session: AsyncSession, values: dict[str, Any], account_ids: list[str]) -> CardRow:
    row = CardRow(**values)
    session.add(row)
    await session.flush()
    await replace_sources(session, card=row, account_ids=account_ids)
    return row


async def get_card(
    session: AsyncSession, *, tenant_id: str, card_id: str, lock: str | None = None
) -> CardRow | None:
    """`lock`: "update" (a change of the card, an authorization: after a change commits the next reads the
    new state) or "share"."""
    return await get_scoped(
        session,
        CardRow,
        id=card_id,
        tenant_id=tenant_id,
        for_update=lock is not None,
        shared=lock == "share",
        refresh=True,
    )


_CARDS, _SOURCES = CardRow.__table__, CardFundingSourceRow.__table__
# An authorization's card with its funding sources in priority order, one row per source (one row with a NULL
# source for a card without any), its cardholder's platformCustomerId and its version (see below).
_CARD_WITH_SOURCES = (
    select(
        _CARDS.c.id,
        _CARDS.c.state,
        _CARDS.c.currency,
        _CARDS.c.max_spend_per_transaction,
        _SOURCES.c.account_id,
        _CARDS.c.cardholder_id,
        customers_service.platform_customer_id_of(_CARDS.c.cardholder_id),
        _CARDS.c.version,
    )
    .select_from(_CARDS.outerjoin(_SOURCES, _SOURCES.c.card_id == _CARDS.c.id))
    .where(_CARDS.c.id == bindparam("card_id"), _CARDS.c.tenant_id == bindparam("tenant_id"))
    .order_by(_SOURCES.c.position)
)
# The careful attempt's read (bench/README.md "cards"): the card locked FOR UPDATE (only the card: FOR UPDATE
# OF, the sources are read, not locked).
_AUTHORIZING = Lean(_CARD_WITH_SOURCES.with_for_update(of=_CARDS))


# The fast path's one read, without a lock (an AUTHORIZATION's lean attempt, `ledger.BalanceOrder.LAST`): the
# card with each source's internal account and balance (the accounts domain's and the ledger's columns,
# appended), decided on at once. The card's version (bumped by every change an authorization decides on:
# its state, its limit, its sources) is expected unchanged by the statement that sends the attempt's writes,
# which locks the card FOR SHARE to read it (`_CARD_UNCHANGED`, a PostgreSQL lean transaction: db/lean.py):
# a change committed meanwhile sends the authorization to the careful attempt, which decides again under the
# card's lock; a change waiting to commit waits for it (it then sees the authorization, as a close must). The
# card's lock is taken there before the balance's (the expectations go in the order they were made), the
# order every other path takes them in. (On SQLite the attempt's transaction holds the write lock from its
# BEGIN IMMEDIATE: nothing changes under it.)
_AUTHORIZING_AT_ONCE = Lean(
    ledger_service.with_balance(
        accounts_service.with_internal(
            _CARD_WITH_SOURCES, account_id=_SOURCES.c.account_id, tenant_id=_CARDS.c.tenant_id
        ),
        account_id=_SOURCES.c.account_id,
    )
)
_CARD_UNCHANGED = Lean(
    select(_CARDS.c.version == bindparam("version"))
    .where(_CARDS.c.id == bindparam("card_id"), _CARDS.c.tenant_id == bindparam("tenant_id"))
    .with_for_update(read=True)
)
_BASE_WIDTH = 8


class SourceRead(NamedTuple):
    """A funding source as an authorization's one read found it: its internal account and its balance
    (None: no such account, or no balance)."""

    account: Any
    balance: Any


async def card_at_once(
    session: LeanSession, *, tenant_id: str, card_id: str
) -> tuple[tuple[str, str, str, int | None], list[str], tuple[str, str | None], list[SourceRead]] | None:
    """`card_for_authorization` without the lock, with each source's internal account and balance read in the
    same statement (`_AUTHORIZING_AT_ONCE`); None when the tenant has no such card. On PostgreSQL the card as
    read is expected unchanged by the statement that sends the transaction's writes."""
    found = await lean.rows(session, _AUTHORIZING_AT_ONCE, {"card_id": card_id, "tenant_id": tenant_id})
    if not found:
        return None
    card_id_, state, currency, max_spend, _, cardholder_id, platform_customer_id, version = found[0][
        :_BASE_WIDTH
    ]
    source_ids = [row[4] for row in found if row[4] is not None]
    width = accounts_service.INTERNAL_WIDTH
    sources = [
        SourceRead(
            accounts_service.internal_from(row[_BASE_WIDTH : _BASE_WIDTH + width]),
            ledger_service.balance_from(row[_BASE_WIDTH + width :]),
        )
        for row in found
        if row[4] is not None
    ]
    if lean.defers_checks(session):
        await lean.expect(
            session, _CARD_UNCHANGED, {"card_id": card_id, "tenant_id": tenant_id, "version": version}
        )
    return (card_id_, state, currency, max_spend), source_ids, (cardholder_id, platform_customer_id), sources


async def card_for_authorization(
    session: LeanSession, *, tenant_id: str, card_id: str
) -> tuple[tuple[str, str, str, int | None], list[str], tuple[str, str | None]] | None:
    """The card an authorization decides on, locked FOR UPDATE (as `get_card(lock="update")`): its
    (id, state, currency, max_spend_per_transaction) as read under the lock, its funding source account
    ids in priority order, and its cardholder (customer id, platformCustomerId); None when the tenant has no
    such card. A read, not an instance: nothing here is saved."""
    found = await lean.rows(session, _AUTHORIZING, {"card_id": card_id, "tenant_id": tenant_id})
    if not found:
        return None
    card_id_, state, currency, max_spend, _, cardholder_id, platform_customer_id, _ = found[0]
    return (
        (card_id_, state, currency, max_spend),
        [row[4] for row in found if row[4] is not None],
        (cardholder_id, platform_customer_id),
    )


async def sources_of(session: AsyncSession, card_ids: list[str]) -> dict[str, list[str]]:
    """Each card's funding source account ids, in priority order."""
    if not card_ids:
        return {}
    rows = await session.execute(
        select(CardFundingSourceRow.card_id, CardFundingSourceRow.account_id)
        .where(CardFundingSourceRow.card_id.in_(card_ids))
        .order_by(CardFundingSourceRow.card_id, CardFundingSourceRow.position)
    )
    found: dict[str, list[str]] = {card_id: [] for card_id in card_ids}
    for card_id, account_id in rows:
        found[card_id].append(account_id)
    return found


def changed_for_authorizations(card: CardRow) -> None:
    """Record a change an authorization decides on (the card's state, limit or funding sources): its version
    moves, so an authorization decided on the card as it was fails its expectation (`card_at_once`)."""
    card.version = (card.version or 0) + 1


async def replace_sources(session: AsyncSession, *, card: CardRow, account_ids: list[str]) -> None:
    changed_for_authorizations(card)
    await session.execute(delete(CardFundingSourceRow).where(CardFundingSourceRow.card_id == card.id))
    if account_ids:
        await session.execute(
            insert(CardFundingSourceRow),
            [
                {"card_id": card.id, "position": index, "tenant_id": card.tenant_id, "account_id": account_id}
                for index, account_id in enumerate(account_ids)
            ],
        )


def card_query(
    *,
    tenant_id: str,
    cardholder_id: str | None = None,
    account_id: str | None = None,
    platform_card_id: str | None = None,
    state: str | None = None,
) -> Select[Any]:
    stmt = select(CardRow).where(CardRow.tenant_id == tenant_id)
    if cardholder_id is not None:
        stmt = stmt.where(CardRow.cardholder_id == cardholder_id)
    if platform_card_id is not None:
        stmt = stmt.where(CardRow.platform_card_id == platform_card_id)
    if state is not None:
        stmt = stmt.where(CardRow.state == state)
    if account_id is not None:
        funded = select(CardFundingSourceRow.card_id).where(
            CardFundingSourceRow.tenant_id == tenant_id, CardFundingSourceRow.account_id == account_id
        )
        stmt = stmt.where(CardRow.id.in_(funded))
    return stmt


_INSERT_TRANSACTION = Lean(CardTransactionRow.__table__.insert())


async def insert_transaction(session: LeanSession, values: dict[str, Any]) -> CardTransactionRow:
    """Insert a new card transaction leanly (the only way they are inserted; `values` by attribute name): the
    row comes back attached to the session as if loaded, so later changes flush as UPDATEs."""
    return await lean.add(session, _INSERT_TRANSACTION, CardTransactionRow, values)


async def get_transaction(
    session: AsyncSession, *, tenant_id: str, transaction_id: str, for_update: bool = False
) -> CardTransactionRow | None:
    return await get_scoped(
        session,
        CardTransactionRow,
        id=transaction_id,
        tenant_id=tenant_id,
        for_update=for_update,
        refresh=True,
    )


def transaction_query(
    *, tenant_id: str, card_id: str | None = None, account_id: str | None = None, status: str | None = None
) -> Select[Any]:
    stmt = select(CardTransactionRow).where(CardTransactionRow.tenant_id == tenant_id)
    if card_id is not None:
        stmt = stmt.where(CardTransactionRow.card_id == card_id)
    if account_id is not None:
        stmt = stmt.where(CardTransactionRow.account_id == account_id)
    if status is not None:
        stmt = stmt.where(CardTransactionRow.status == status)
    return stmt


# card transactions that put money on the card (decisioning.Purpose.CREDIT): their account receives
CREDIT_KINDS = ("CREDIT_AUTHORIZATION", "CREDIT_AUTHORIZATION_ADVICE", "FINANCIAL_CREDIT_AUTHORIZATION")


def listed_query(
    *,
    tenant_id: str,
    customer_id: str | None = None,
    platform_customer_id: str | None = None,
    account_identifier: str | None = None,
    sender_account_identifier: str | None = None,
    receiver_account_identifier: str | None = None,
    status: str | None = None,
    start_date: datetime | None = None,
    end_date: datetime | None = None,
) -> Select[Any]:
    """The tenant's card transactions as GET /transactions filters them (payments.hooks)."""
    row = CardTransactionRow
    stmt = select(row).where(row.tenant_id == tenant_id)
    if customer_id is not None:
        stmt = stmt.where(row.customer_id == customer_id)
    if platform_customer_id is not None:
        stmt = stmt.where(row.platform_customer_id == platform_customer_id)
    if account_identifier is not None:
        stmt = stmt.where(row.account_id == account_identifier)
    if sender_account_identifier is not None:
        stmt = stmt.where(row.account_id == sender_account_identifier, row.kind.not_in(CREDIT_KINDS))
    if receiver_account_identifier is not None:
        stmt = stmt.where(row.account_id == receiver_account_identifier, row.kind.in_(CREDIT_KINDS))
    if status is not None:
        stmt = stmt.where(row.status == status)
    if start_date is not None:
        stmt = stmt.where(row.created_at >= start_date)
    if end_date is not None:
        stmt = stmt.where(row.created_at <= end_date)
    return stmt


async def listed_page(
    session: AsyncSession,
    stmt: Select[Any],
    *,
    after: tuple[datetime, str] | None,
    descending: bool,
    limit: int,
) -> list[tuple[CardTransactionRow, bool]]:
    """At most `limit` rows of `listed_query`'s `stmt` in (created_at, id) order strictly after `after`,
    read through ix_card_transactions_tenant_created, each with whether it has CardRefunds (so a page
    without any skips reading them)."""
    row = CardTransactionRow
    refunded = exists().where(CardRefundRow.card_transaction_id == row.id)
    stmt = keyset_page(
        stmt.add_columns(refunded.label("has_refunds")),
        created_at=row.created_at,
        id_column=row.id,
        after=after,
        descending=descending,
        limit=limit,
    )
    return [(found, bool(has)) for found, has in (await session.execute(stmt)).all()]


async def open_transactions(
    session: AsyncSession, *, tenant_id: str, card_id: str, statuses: frozenset[str]
) -> list[CardTransactionRow]:
    stmt = (
        select(CardTransactionRow)
        .where(
            CardTransactionRow.tenant_id == tenant_id,
            CardTransactionRow.card_id == card_id,
            CardTransactionRow.status.in_(statuses),
        )
        .order_by(CardTransactionRow.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return list((await session.scalars(stmt)).all())


async def insert_refund(session: AsyncSession, values: dict[str, Any]) -> CardRefundRow:
    row = CardRefundRow(**values)
    session.add(row)
    await session.flush()
    return row


async def refunds_of(session: AsyncSession, transaction_ids: list[str]) -> dict[str, list[CardRefundRow]]:
    if not transaction_ids:
        return {}
    rows = await session.scalars(
        select(CardRefundRow)
        .where(CardRefundRow.card_transaction_id.in_(transaction_ids))
        .order_by(CardRefundRow.id)
    )
    found: dict[str, list[CardRefundRow]] = {tid: [] for tid in transaction_ids}
    for row in rows:
        found[row.card_transaction_id].append(row)
    return found


async def card_by_embed_token(session: AsyncSession, *, token: str) -> CardRow | None:
    """The card whose panEmbedUrl carries `token` (the token is the credential: a page, not the API)."""
    return (await session.execute(select(CardRow).where(CardRow.embed_token == token))).scalar_one_or_none()


async def insert_reveal(session: AsyncSession, values: dict[str, Any]) -> CardRevealRow:
    row = CardRevealRow(**values)
    session.add(row)
    await session.flush()
    return row


async def reveal_by_digest(session: AsyncSession, *, token_digest: str) -> CardRevealRow | None:
    """The reveal whose URL carries the token of this digest (the token is the credential: a page)."""
    return (
        await session.execute(select(CardRevealRow).where(CardRevealRow.token_digest == token_digest))
    ).scalar_one_or_none()


async def use_reveal(session: AsyncSession, *, reveal_id: str, now: datetime) -> bool:
    """Mark the reveal's URL used, if it was not and has not expired at `now` (one statement: two loads of
    the page racing, one of them shows it)."""
    result = await session.execute(
        update(CardRevealRow)
        .where(CardRevealRow.id == reveal_id, CardRevealRow.used_at.is_(None), CardRevealRow.expires_at > now)
        .values(used_at=now)
    )
    return bool(cast("CursorResult[Any]", result).rowcount)
