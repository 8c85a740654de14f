"""All SQL on platforms and tenants."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, SQLColumnExpression, Text, cast, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.selectable import ScalarSelect

from platpay.clocks import service as clocks_service
from platpay.tenants.models import PlatformRow, TenantRow

# What a TenantContext is built from, in the order of its fields (service.context_from_columns). The
# currencies come as their JSON text: decoded only for a tenant configuration not seen yet. The tenant's clock
# columns (clocks_service.join_clock) follow them.
CONTEXT_COLUMNS = (
    TenantRow.id,
    TenantRow.platform_id,
    TenantRow.environment,
    PlatformRow.is_regulated,
    TenantRow.config_id,
    TenantRow.uma_domain,
    TenantRow.webhook_endpoint,
    cast(TenantRow.supported_currencies, Text),
    TenantRow.webhook_public_key_pem,
    TenantRow.created_at,
    TenantRow.updated_at,
    cast(TenantRow.embedded_wallet_config, Text),
    TenantRow.end_user_terms_required,
    cast(TenantRow.fee_configs, Text),
)


def join_context(
    stmt: Select[*tuple[Any, ...]], tenant_id: SQLColumnExpression[str]
) -> Select[*tuple[Any, ...]]:
    """`stmt` joined to the tenant `tenant_id` names and its platform, CONTEXT_COLUMNS appended."""
    joined = (
        stmt.join(TenantRow, TenantRow.id == tenant_id)
        .join(PlatformRow, PlatformRow.id == TenantRow.platform_id)
        .add_columns(*CONTEXT_COLUMNS)
    )
    return clocks_service.join_clock(joined, TenantRow.id)


async def get_tenant(session: AsyncSession, tenant_id: str, *, for_update: bool = False) -> TenantRow | None:
    stmt = select(TenantRow).where(TenantRow.id == tenant_id)
    if for_update:
        stmt = stmt.with_for_update()
    return await session.scalar(stmt)


async def get_platform(session: AsyncSession, platform_id: str) -> PlatformRow | None:
    return await session.get(PlatformRow, platform_id)


async def count_platforms(session: AsyncSession) -> int:
    return len((await session.scalars(select(PlatformRow.id).limit(1))).all())


async def webhook_endpoint(session: AsyncSession, tenant_id: str) -> str | None:
    return await session.scalar(select(TenantRow.webhook_endpoint).where(TenantRow.id == tenant_id))


def webhook_endpoint_of(tenant_id: ColumnElement[str]) -> ScalarSelect[str | None]:
    return select(TenantRow.webhook_endpoint).where(TenantRow.id == tenant_id).scalar_subquery()


async def public_key_and_sealed_private(session: AsyncSession, tenant_id: str) -> tuple[str, str] | None:
    row = (
        await session.execute(
            select(TenantRow.webhook_public_key_pem, TenantRow.webhook_private_key_sealed).where(
                TenantRow.id == tenant_id
            )
        )
    ).first()
    return (row[0], row[1]) if row else None


async def list_tenants(session: AsyncSession) -> list[TenantRow]:
    return list((await session.scalars(select(TenantRow).order_by(TenantRow.id))).all())


async def tenant_of_platform(session: AsyncSession, platform_id: str, environment: str) -> TenantRow | None:
    return await session.scalar(
        select(TenantRow).where(TenantRow.platform_id == platform_id, TenantRow.environment == environment)
    )
