"""incoming approval columns

An incoming UMA payment's approval by the platform (payments/state.py APPROVAL) moves from the JSON
`extra["approval"]` of its transaction to columns of its own: approval_state, approval_deadline,
approval_timeout_us and approval_arrival_delay_us (seconds as whole microseconds, what a timedelta keeps),
approval_decided_at, approval_decided_by. Existing rows are moved over, and `approval` leaves their `extra`
(its `deferredAt`, never read, is the deadline less the timeout). The downgrade moves them back.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 10:00:00.000000
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UMA_INCOMING = 'UMA_INCOMING'  # the only kind of transaction with an approval
BATCH = 500

transactions = sa.table(
    'transactions',
    sa.column('id', sa.String(64)),
    sa.column('kind', sa.String(24)),
    sa.column('extra', platpay.db.types.JsonType),
    sa.column('approval_state', sa.String(20)),
    sa.column('approval_deadline', platpay.db.types.UtcDateTime()),
    sa.column('approval_timeout_us', sa.BigInteger()),
    sa.column('approval_arrival_delay_us', sa.BigInteger()),
    sa.column('approval_decided_at', platpay.db.types.UtcDateTime()),
    sa.column('approval_decided_by', sa.String(16)),
)
_COLUMNS = (
    'approval_state',
    'approval_deadline',
    'approval_timeout_us',
    'approval_arrival_delay_us',
    'approval_decided_at',
    'approval_decided_by',
)


def upgrade() -> None:
    with op.batch_alter_table('transactions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('approval_state', sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column('approval_deadline', platpay.db.types.UtcDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('approval_timeout_us', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('approval_arrival_delay_us', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('approval_decided_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('approval_decided_by', sa.String(length=16), nullable=True))

    updates = []
    for row in _uma_incoming(transactions.c.extra):
        extra = dict(row.extra or {})
        approval = extra.pop('approval', None)
        if not isinstance(approval, dict):
            continue
        updates.append({'_id': row.id, 'extra': extra, **_columns(approval)})
        if len(updates) >= BATCH:
            _update(updates)
            updates = []
    _update(updates)


def downgrade() -> None:
    updates = []
    for row in _uma_incoming(transactions.c.extra, *(transactions.c[name] for name in _COLUMNS)):
        if row.approval_state is None:
            continue
        extra = {**(row.extra or {}), 'approval': _approval(row)}
        updates.append({'_id': row.id, 'extra': extra})
        if len(updates) >= BATCH:
            _update(updates, only_extra=True)
            updates = []
    _update(updates, only_extra=True)

    with op.batch_alter_table('transactions', schema=None) as batch_op:
        batch_op.drop_column('approval_decided_by')
        batch_op.drop_column('approval_decided_at')
        batch_op.drop_column('approval_arrival_delay_us')
        batch_op.drop_column('approval_timeout_us')
        batch_op.drop_column('approval_deadline')
        batch_op.drop_column('approval_state')


def _uma_incoming(*columns: Any) -> Iterator[Any]:
    """The UMA_INCOMING transactions (id and `columns`), BATCH at a time in id order."""
    bind = op.get_bind()
    after = ''
    while True:
        rows = bind.execute(
            sa.select(transactions.c.id, *columns)
            .where(transactions.c.kind == UMA_INCOMING, transactions.c.id > after)
            .order_by(transactions.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        yield from rows
        after = rows[-1].id


def _update(updates: list[dict[str, Any]], *, only_extra: bool = False) -> None:
    if not updates:
        return
    names = ('extra',) if only_extra else ('extra', *_COLUMNS)
    op.get_bind().execute(
        transactions.update()
        .where(transactions.c.id == sa.bindparam('_id'))
        .values({name: sa.bindparam(name) for name in names}),
        updates,
    )


def _instant(raw: Any) -> datetime | None:
    if not isinstance(raw, str) or not raw:
        return None
    value = datetime.fromisoformat(raw)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _microseconds(seconds: Any) -> int | None:
    """Seconds as the application turns them into a timedelta, in whole microseconds."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float | str) or seconds == '':
        return None
    return timedelta(seconds=float(seconds)) // timedelta(microseconds=1)


def _seconds(microseconds: int | None) -> float | None:
    return None if microseconds is None else microseconds / 1_000_000


def _columns(approval: dict[str, Any]) -> dict[str, Any]:
    """extra["approval"] as the columns' values."""
    return {
        'approval_state': approval.get('state'),
        'approval_deadline': _instant(approval.get('deadline')),
        'approval_timeout_us': _microseconds(approval.get('timeoutSeconds')),
        'approval_arrival_delay_us': _microseconds(approval.get('arrivalDelaySeconds')),
        'approval_decided_at': _instant(approval.get('decidedAt')),
        'approval_decided_by': approval.get('decidedBy'),
    }


def _approval(row: Any) -> dict[str, Any]:
    """The columns as extra["approval"] held them (timestamps as the application wrote them)."""
    approval: dict[str, Any] = {
        'state': row.approval_state,
        'timeoutSeconds': _seconds(row.approval_timeout_us),
        'arrivalDelaySeconds': _seconds(row.approval_arrival_delay_us),
    }
    if row.approval_deadline is not None:
        approval['deadline'] = row.approval_deadline.astimezone(UTC).isoformat()
    if row.approval_decided_at is not None:
        decided_at = row.approval_decided_at.astimezone(UTC).isoformat(timespec='milliseconds')
        approval['decidedAt'] = decided_at.replace('+00:00', 'Z')
    if row.approval_decided_by is not None:
        approval['decidedBy'] = row.approval_decided_by
    return approval
