"""retention: indexes the runners' pruning walks (docs/operations.md, Retention)

Every job runner's maintenance prunes, in small batches, finished jobs and the bodies of sent messages past
their retention (`PLATPAY_JOB_RETENTION_DAYS`, `PLATPAY_DEAD_JOB_RETENTION_DAYS`,
`PLATPAY_MESSAGE_BODY_RETENTION_DAYS`). Each batch takes the oldest rows due through an index holding only
the candidates, so its cost does not grow with the table:

- `ix_jobs_finished` (state, finished_at) WHERE finished_at IS NOT NULL: DONE and DEAD jobs by when they
  finished (queued and running jobs, the claims' concern, are not in it; before it, a purge read every DONE
  job through (state, lease_until));
- `ix_messages_with_body` (id) WHERE content IS NOT NULL: the messages that still have a body (queued ones
  and the sandbox mailbox's); erased ones leave it, so the walk never passes over them again.

Webhook delivery attempts need none: they are pruned by their time-ordered primary key.

Revision ID: 0026_retention
Revises: 0025_event_resource
Create Date: 2026-11-29 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0026_retention'
down_revision: str | None = '0025_event_resource'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FINISHED = sa.text('finished_at IS NOT NULL')
_WITH_BODY = sa.text('content IS NOT NULL')


def upgrade() -> None:
    op.create_index(
        'ix_jobs_finished',
        'jobs',
        ['state', 'finished_at'],
        unique=False,
        sqlite_where=_FINISHED,
        postgresql_where=_FINISHED,
    )
    op.create_index(
        'ix_messages_with_body',
        'messages',
        ['id'],
        unique=False,
        sqlite_where=_WITH_BODY,
        postgresql_where=_WITH_BODY,
    )


def downgrade() -> None:
    op.drop_index('ix_messages_with_body', table_name='messages')
    op.drop_index('ix_jobs_finished', table_name='jobs')
