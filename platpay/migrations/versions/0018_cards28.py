"""Cards: per-transaction spending limits, processorRef, 3-D Secure passwords, reveals, card network
messages beyond authorizations (the August 2026 reference's card controls and network messages)

- `cards.max_spend_per_transaction` (minor units of the card's currency, null: no limit),
  `cards.processor_ref` (what the processor calls the card) and `cards.three_ds_password_sealed`.
  Cards the issuer already provisioned get the processorRef the sandbox and simulated issuers derive from
  the card id (`providers.derived_card`: `card_` + hex 16..32 of SHA-256(card id)); others get it when
  provisioned.
- `card_transactions.kind`: the network message that opened the transaction; every existing one was an
  AUTHORIZATION (the column's default while it is added).
- `card_refunds.return_ref`: the RETURN a CardRefund is part of (a return split between payers is several
  rows). Existing rows: the rows of one card transaction written at the same instant were one return
  (`return_` writes them in one transaction), named by the smallest of their ids.
- `card_reveals`: one row per POST /cards/{id}/reveal (who, when, the URL's token digest, its expiry and
  use).

Revision ID: 0018_cards28
Revises: 0017_acct28
Create Date: 2026-12-02 09:00:00.000000
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = "0018_cards28"
down_revision: str | None = "0017_acct28"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CARDS = sa.table(
    "cards",
    sa.column("id", sa.String()),
    sa.column("issuer_ref", sa.String()),
    sa.column("processor_ref", sa.String()),
)
_REFUNDS = sa.table(
    "card_refunds",
    sa.column("id", sa.String()),
    sa.column("card_transaction_id", sa.String()),
    sa.column("created_at", sa.String()),
    sa.column("return_ref", sa.String()),
)


def upgrade() -> None:
    # Plain ADD/DROP COLUMN, not batch mode: SQLite's batch recreates a table (copy, drop, rename), and the
    # drop fails while other tables reference its rows (cards, card_transactions). The two NOT NULL columns
    # come with a default for the rows already there.
    op.add_column("cards", sa.Column("processor_ref", sa.String(length=64), nullable=True))
    op.add_column("cards", sa.Column("max_spend_per_transaction", sa.BigInteger(), nullable=True))
    op.add_column("cards", sa.Column("three_ds_password_sealed", sa.Text(), nullable=True))
    op.add_column(
        "card_transactions",
        sa.Column("kind", sa.String(length=32), nullable=False, server_default="AUTHORIZATION"),
    )
    op.add_column(
        "card_refunds", sa.Column("return_ref", sa.String(length=64), nullable=False, server_default="")
    )

    connection = op.get_bind()
    issued = (
        connection.execute(sa.select(_CARDS.c.id).where(_CARDS.c.issuer_ref.is_not(None))).scalars().all()
    )
    for card_id in issued:
        digest = hashlib.sha256(card_id.encode()).hexdigest()
        connection.execute(
            _CARDS.update().where(_CARDS.c.id == card_id).values(processor_ref=f"card_{digest[16:32]}")
        )
    same_return = sa.alias(_REFUNDS, "same_return")
    op.execute(
        _REFUNDS.update().values(
            return_ref=sa.select(sa.func.min(same_return.c.id))
            .where(
                same_return.c.card_transaction_id == _REFUNDS.c.card_transaction_id,
                same_return.c.created_at == _REFUNDS.c.created_at,
            )
            .scalar_subquery()
        )
    )
    if connection.dialect.name == "postgresql":  # (SQLite keeps the defaults: it has no ALTER … DROP DEFAULT)
        op.alter_column("card_transactions", "kind", server_default=None)
        op.alter_column("card_refunds", "return_ref", server_default=None)

    op.create_table(
        "card_reveals",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("card_id", sa.String(length=64), nullable=False),
        sa.Column("actor", sa.String(length=80), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("created_at", platpay.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", platpay.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column("used_at", platpay.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["card_id"], ["cards.id"], name=op.f("fk_card_reveals_card_id_cards")),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_card_reveals_tenant_id_tenants")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_card_reveals")),
    )
    with op.batch_alter_table("card_reveals", schema=None) as batch_op:
        batch_op.create_index("ix_card_reveals_tenant_card", ["tenant_id", "card_id", "id"], unique=False)
        batch_op.create_index("ix_card_reveals_token_digest", ["token_digest"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("card_reveals", schema=None) as batch_op:
        batch_op.drop_index("ix_card_reveals_token_digest")
        batch_op.drop_index("ix_card_reveals_tenant_card")
    op.drop_table("card_reveals")
    op.drop_column("card_refunds", "return_ref")
    op.drop_column("card_transactions", "kind")
    op.drop_column("cards", "three_ds_password_sealed")
    op.drop_column("cards", "max_spend_per_transaction")
    op.drop_column("cards", "processor_ref")
