"""Who is calling: one Principal type for every kind of credential.

Two kinds exist: a platform's API token (HTTP Basic clientId:clientSecret) and an agent's access token
(`Authorization: Bearer`, resolved by the agents domain, which registers its resolver with
`auth.principals.resolver("Bearer")`). Endpoints only ever see a `Principal`: platform endpoints require a
PLATFORM_TOKEN holding a permission (`TokenAuth`), agent endpoints an AGENT_TOKEN (agents' `AgentAuth`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from platpay.auth.schemas import Permission
from platpay.tenants.context import TenantContext


class PrincipalKind(StrEnum):
    PLATFORM_TOKEN = "PLATFORM_TOKEN"
    AGENT_TOKEN = "AGENT_TOKEN"


@dataclass(frozen=True, slots=True)
class Principal:
    kind: PrincipalKind
    id: str  # the credential's id (a token id, an agent id): idempotency keys are scoped to it
    permissions: frozenset[str]  # a platform token's permissions (VIEW, TRANSACT, MANAGE); none for agents
    tenant: TenantContext
    customer_id: str | None = None  # AGENT_TOKEN: the customer the agent acts for

    def allows(self, permission: Permission) -> bool:
        """Whether this is a platform token holding `permission` (VIEW: any permission). An agent's token
        holds none of them: its powers are its policy's, checked by the agents domain."""
        if self.kind != PrincipalKind.PLATFORM_TOKEN:
            return False
        if permission == Permission.VIEW:
            return bool(self.permissions)
        return permission.value in self.permissions
