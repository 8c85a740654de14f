"""The agents domain's tables: agents, their usage counters, device codes and actions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from platpay.agents.state import ActionStatus, ActionType
from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime


class AgentRow(Base):
    """Software acting for one customer under a policy. Its bearer token is stored only as a SHA-256 hash
    (`token_sha256`, null until a device code is redeemed and again once deleted); deletion is permanent:
    the row stays (actions and transactions name it) with `deleted_at` set and no token."""

    __tablename__ = "agents"
    __table_args__ = (
        Index("ix_agents_tenant_id_id", "tenant_id", "id"),
        Index("ix_agents_tenant_customer", "tenant_id", "customer_id"),
        Index("ix_agents_token_sha256", "token_sha256", unique=True),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_id: Mapped[str] = mapped_column(IdColumn())
    platform_customer_id: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(255))
    is_paused: Mapped[bool] = mapped_column(Boolean)
    is_connected: Mapped[bool] = mapped_column(Boolean)
    policy: Mapped[dict[str, Any]] = mapped_column(JsonType)  # AgentPolicy as the API spells it
    token_sha256: Mapped[str | None] = mapped_column(String(64))
    token_prefix: Mapped[str | None] = mapped_column(String(16))  # the first characters, for recognition
    # When the current token first authenticated a request (its TOKEN_FIRST_USED audit record's time); null
    # until then. Authentication reads it with the token, so only a token's first request writes.
    token_first_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    deleted_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class AgentUsageRow(Base):
    """An agent's spend counters in its policy currency, for the UTC day `day` and month `month` they count
    (a new day or month starts from zero). Every money request of the agent locks this row first, so the
    agent's requests serialize and a limit holds under concurrency."""

    __tablename__ = "agent_usage"

    agent_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("agents.id"), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    currency: Mapped[str] = mapped_column(String(8))  # the policy currency the amounts are in
    day: Mapped[str] = mapped_column(String(10))  # YYYY-MM-DD (UTC)
    daily_spend: Mapped[int] = mapped_column(BigInteger)
    daily_count: Mapped[int] = mapped_column(Integer)
    month: Mapped[str] = mapped_column(String(7))  # YYYY-MM (UTC)
    monthly_spend: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class DeviceCodeRow(Base):
    """A one-time code the agent software redeems for its token; stored as a SHA-256 hash."""

    __tablename__ = "agent_device_codes"
    __table_args__ = (
        Index("ix_agent_device_codes_code_sha256", "code_sha256", unique=True),
        Index("ix_agent_device_codes_agent_id", "agent_id"),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    agent_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("agents.id"))
    code_sha256: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    redeemed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    invalidated_at: Mapped[datetime | None] = mapped_column(UtcDateTime())  # a newer code replaced it
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class AgentActionRow(Base):
    """A money operation an agent asked for (agents/state.py: PENDING_APPROVAL → APPROVED | REJECTED |
    FAILED, or APPROVED at once). While pending, what it would take is reserved: a transfer-out's own hold,
    a quote's amount held on its source account (`reserved_*`), and its amount counted in the usage of the
    day and month it was asked in (`usage_*`), so that approving everything never exceeds a limit."""

    __tablename__ = "agent_actions"
    __table_args__ = (
        Index("ix_agent_actions_tenant_id_id", "tenant_id", "id"),
        Index("ix_agent_actions_agent_id", "agent_id"),
        Index("ix_agent_actions_tenant_status", "tenant_id", "status"),
        check_in("status", ActionStatus),
        check_in("type", ActionType),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    agent_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("agents.id"))
    customer_id: Mapped[str] = mapped_column(IdColumn())
    platform_customer_id: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(20))
    type: Mapped[str] = mapped_column(String(16))  # EXECUTE_QUOTE | TRANSFER_OUT | TRANSFER_IN
    quote_id: Mapped[str | None] = mapped_column(IdColumn())
    transfer: Mapped[dict[str, Any] | None] = mapped_column(JsonType)  # AgentTransferDetails
    transaction_id: Mapped[str | None] = mapped_column(IdColumn())
    started: Mapped[bool] = mapped_column(Boolean)  # its transaction was sent (shown on the action)
    account_id: Mapped[str | None] = mapped_column(IdColumn())  # the internal account the policy judged
    amount: Mapped[int] = mapped_column(BigInteger)  # minor units of `currency`
    currency: Mapped[str] = mapped_column(String(8))
    reserved_account_id: Mapped[str | None] = mapped_column(IdColumn())  # a quote's held source, pending
    reserved_amount: Mapped[int] = mapped_column(BigInteger)
    usage_amount: Mapped[int] = mapped_column(BigInteger)  # counted, in the usage currency
    usage_currency: Mapped[str] = mapped_column(String(8))
    usage_day: Mapped[str] = mapped_column(String(10))
    usage_month: Mapped[str] = mapped_column(String(7))
    decision: Mapped[dict[str, Any]] = mapped_column(JsonType)  # the policy's rule, reason, remaining
    rejection_reason: Mapped[str | None] = mapped_column(Text)
    failure: Mapped[dict[str, Any] | None] = mapped_column(JsonType)  # {code, message} when FAILED
    decided_by: Mapped[str | None] = mapped_column(String(64))  # the platform credential that decided
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class AgentAuditRow(Base):
    """One event of an agent's life (agents/audit/service.py), append-only and chained per agent: `hash` is the
    HMAC-SHA-256 under the audit key (SHA-256 before revision 0016: `hash_algorithm`) of `previous_hash`
    and the record's canonical content, `sequence` counts from 1. No foreign key to the agent: the trail
    outlives it."""

    __tablename__ = "agent_audit_records"
    __table_args__ = (
        UniqueConstraint("agent_id", "sequence"),
        Index("ix_agent_audit_records_tenant_agent", "tenant_id", "agent_id", "id"),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn())
    agent_id: Mapped[str] = mapped_column(IdColumn())
    sequence: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(40))
    actor: Mapped[str | None] = mapped_column(String(100))  # the credential that caused it (None: the system)
    occurred_at: Mapped[datetime] = mapped_column(UtcDateTime())
    data: Mapped[dict[str, Any]] = mapped_column(JsonType)
    previous_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))
    hash_algorithm: Mapped[str] = mapped_column(String(16))  # HMAC-SHA-256; SHA-256 (before 0016)
    # On the last SHA-256 record of a chain keyed by revision 0016: HMAC of its hash (audit.legacy_seal_of)
    legacy_seal: Mapped[str | None] = mapped_column(String(64))


class AgentAuditHeadRow(Base):
    """The last record of an agent's chain, locked by whoever appends (records of one agent serialize, so
    the chain never forks) and kept to catch a removed tail."""

    __tablename__ = "agent_audit_heads"

    agent_id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn())
    sequence: Mapped[int] = mapped_column(BigInteger)
    hash: Mapped[str] = mapped_column(String(64))
