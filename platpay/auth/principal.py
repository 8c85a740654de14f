"""Who is calling: one Principal type for every kind of credential.

Today one kind exists, a platform's API token (HTTP Basic clientId:clientSecret). The next (an agent's
bearer token) adds a `PrincipalKind` member and registers a resolver for its Authorization scheme with
`auth.principals.resolver`; endpoints, which only ever see a `Principal`, do not change.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from platpay.auth.schemas import Permission
from platpay.tenants.context import TenantContext


class PrincipalKind(StrEnum):
    PLATFORM_TOKEN = "PLATFORM_TOKEN"


@dataclass(frozen=True, slots=True)
class Principal:
    kind: PrincipalKind
    id: str  # the credential's id (a token id for PLATFORM_TOKEN): idempotency keys are scoped to it
    permissions: frozenset[str]
    tenant: TenantContext

    def allows(self, permission: Permission) -> bool:
        if permission == Permission.VIEW:
            return bool(self.permissions)
        return permission.value in self.permissions
