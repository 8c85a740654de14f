"""event_resource: events name the resource they are about (`resource_id`), indexed with their tenant

An event's `data` is its resource exactly as GET returns it, so its subject is `data.id`; finding every event
of one resource (the console's timeline of a transaction, a customer, an account) read the whole outbox of the
tenant to look inside each JSON document. `resource_id` keeps that id in a column, written by
`events.service.emit` in the event's own INSERT, with a (tenant_id, resource_id) index. Events whose data has
no string `id` (the TEST ping) keep it null.

webhook_deliveries get (tenant_id, status) and (tenant_id, updated_at) indexes: an endpoint's health counts its
tenant's PENDING and FAILED deliveries and the outcomes of the last 24 hours without reading them all.

Backfill: every existing event gets its data's `id` (`->>` on PostgreSQL's JSONB, `json_extract` on SQLite),
one UPDATE. Plain ADD COLUMN, not batch mode: SQLite's batch recreates the table, and its drop fails while
webhook_deliveries reference its rows (as 0018 and 0021 say).

Revision ID: 0025_event_resource
Revises: 0024_decision
Create Date: 2026-11-29 04:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0025_event_resource'
down_revision: str | None = '0024_decision'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BACKFILL = {
    'postgresql': "UPDATE events SET resource_id = data->>'id' WHERE jsonb_typeof(data->'id') = 'string'",
    'sqlite': "UPDATE events SET resource_id = json_extract(data, '$.id') WHERE json_type(data, '$.id') = 'text'",
}


def upgrade() -> None:
    op.add_column('events', sa.Column('resource_id', sa.String(length=64), nullable=True))
    op.create_index('ix_events_tenant_resource', 'events', ['tenant_id', 'resource_id'], unique=False)
    op.create_index(
        'ix_webhook_deliveries_tenant_status', 'webhook_deliveries', ['tenant_id', 'status'], unique=False
    )
    op.create_index(
        'ix_webhook_deliveries_tenant_updated', 'webhook_deliveries', ['tenant_id', 'updated_at'], unique=False
    )
    connection = op.get_bind()
    connection.execute(sa.text(_BACKFILL[connection.dialect.name]))


def downgrade() -> None:
    op.drop_index('ix_webhook_deliveries_tenant_updated', table_name='webhook_deliveries')
    op.drop_index('ix_webhook_deliveries_tenant_status', table_name='webhook_deliveries')
    op.drop_index('ix_events_tenant_resource', table_name='events')
    op.drop_column('events', 'resource_id')
