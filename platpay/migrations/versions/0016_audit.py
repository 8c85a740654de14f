"""audit: the agents' audit chain is keyed, so a record re-hashed without the key fails verify: HMAC-SHA-256 under a key derived from the master key

Records keep the algorithm they were hashed with (`hash_algorithm`): every existing record stays what it is,
plain SHA-256, so the hashes of exports and heads anchored before this revision stay valid, and every record
written from now on is HMAC-SHA-256 under the audit key (platpay/agents/audit/service.py). Re-keying the existing
records instead would have changed every hash ever exported, and a re-key cannot tell an honest chain from
one already rewritten.

A plain record is trusted only up to its chain's legacy seal: for each existing chain this revision puts
`legacy_seal` = HMAC(audit key, "legacy-seal" NUL hash) on the record its head points at. Without the seal,
a keyed chain relabelled SHA-256 and re-hashed without the key would verify. What the seal vouches for is
the chain as it stands now: a rewrite made before this revision is not detected by it (the plain hash
never could). A chain whose head points at no record (its tail already removed) gets no seal, and keeps
failing verification as it did.

Sealing needs the master key (PLATPAY_MASTER_KEY, or var/master.key): it is read only when a chain exists.

Downgrade drops both columns: keyed records then fail the older version's verify (it recomputes plain
SHA-256).

Revision ID: 0016_audit
Revises: 0015_cardusd
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from platpay.agents.audit.service import chain_key, legacy_seal_of

revision: str = "0016_audit"
down_revision: str | None = "0015_cardusd"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_HEADS = sa.table("agent_audit_heads", sa.column("agent_id"), sa.column("sequence"), sa.column("hash"))
_RECORDS = sa.table(
    "agent_audit_records",
    *(sa.column(name) for name in ("id", "agent_id", "sequence", "hash", "legacy_seal")),
)


def upgrade() -> None:
    with op.batch_alter_table("agent_audit_records", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("hash_algorithm", sa.String(length=16), nullable=False, server_default="SHA-256")
        )
        batch_op.add_column(sa.Column("legacy_seal", sa.String(length=64), nullable=True))
    with op.batch_alter_table("agent_audit_records", schema=None) as batch_op:
        batch_op.alter_column("hash_algorithm", server_default=None)  # new records name theirs
    connection = op.get_bind()
    heads = connection.execute(
        sa.select(_RECORDS.c.id, _RECORDS.c.hash).select_from(
            _HEADS.join(
                _RECORDS,
                sa.and_(
                    _RECORDS.c.agent_id == _HEADS.c.agent_id,
                    _RECORDS.c.sequence == _HEADS.c.sequence,
                    _RECORDS.c.hash == _HEADS.c.hash,
                ),
            )
        )
    ).all()
    if not heads:
        return
    key = chain_key()
    for record_id, record_hash in heads:
        connection.execute(
            _RECORDS.update()
            .where(_RECORDS.c.id == record_id)
            .values(legacy_seal=legacy_seal_of(record_hash, key=key))
        )


def downgrade() -> None:
    with op.batch_alter_table("agent_audit_records", schema=None) as batch_op:
        batch_op.drop_column("legacy_seal")
        batch_op.drop_column("hash_algorithm")
