"""Every router the API serves, in one place (a new domain adds its router here)."""

from __future__ import annotations

from platpay.auth.endpoints import router as tokens_router
from platpay.config import Settings
from platpay.events.endpoints import router as webhooks_router
from platpay.events.endpoints import sandbox_router as sandbox_webhooks_router
from platpay.platforms.endpoints import router as config_router

ROUTERS = (config_router, tokens_router, webhooks_router, sandbox_webhooks_router)


def body_limits(settings: Settings) -> dict[str, int]:
    """Paths that take larger bodies than PLATPAY_MAX_BODY_BYTES (uploads)."""
    return {}
