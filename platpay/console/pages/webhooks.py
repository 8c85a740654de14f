"""The console's webhooks pages (to be built)."""

from __future__ import annotations

from platpay.console import web

router = web.console_router()
