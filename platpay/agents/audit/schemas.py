"""Response bodies of GET /agents/{agentId}/audit."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from platpay.agents.audit import service as audit
from platpay.kit.api_model import ApiModel
from platpay.kit.pagination import Page

AuditKind = Literal[audit.KINDS]  # type: ignore[valid-type]


class AgentAuditRecord(ApiModel):
    id: str
    tenant_id: str
    agent_id: str
    sequence: int = Field(description="1, 2, 3… per agent")
    kind: str = Field(description=" | ".join(audit.KINDS))
    actor: str | None = Field(None, description="the credential that caused it (KIND:id); absent: the system")
    occurred_at: datetime
    data: dict[str, Any]
    previous_hash: str = Field(description="the previous record's hash (64 zeros for the first)")
    hash: str = Field(
        description="hashAlgorithm of previousHash and the record's canonical content (hex): HMAC-SHA-256 under "
        "the audit key (HKDF-SHA-256 of the master key, info 'platpay agent audit chain v1')"
    )
    hash_algorithm: Literal[audit.KEYED, audit.PLAIN] = Field(  # type: ignore[valid-type]
        description="HMAC-SHA-256; SHA-256 for records written before the chain was keyed"
    )
    legacy_seal: str | None = Field(
        None,
        description="on the last SHA-256 record of a chain keyed later: HMAC-SHA-256 under the audit key of "
        "'legacy-seal', NUL and its hash, vouching for the SHA-256 records up to it; absent on every other",
    )


class AgentAuditRecordListResponse(Page[AgentAuditRecord]):
    """GET /agents/{agentId}/audit."""
