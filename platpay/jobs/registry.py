"""Job kinds and their handlers. Domains register handlers at import; `load_handlers` imports them all."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from platpay.jobs.runner import JobContext

Handler = Callable[["JobContext"], Awaitable[None]]

_HANDLERS: dict[str, Handler] = {}

# Modules that register handlers. A new domain with jobs adds itself here.
HANDLER_MODULES = (
    "platpay.jobs.builtin",
    "platpay.events.delivery",
    "platpay.accounts.jobs",
    "platpay.customers.bulk_jobs",
    "platpay.payments.jobs",
    "platpay.fx.jobs",
    "platpay.payments.incoming_jobs",
)


def handler(kind: str) -> Callable[[Handler], Handler]:
    def register(func: Handler) -> Handler:
        _HANDLERS[kind] = func
        return func

    return register


def get(kind: str) -> Handler | None:
    return _HANDLERS.get(kind)


def load_handlers(plugins: str = "") -> None:
    """Import built-in handler modules plus comma-separated plugin modules (PLATPAY_JOB_PLUGINS)."""
    for module in (*HANDLER_MODULES, *(name.strip() for name in plugins.split(",") if name.strip())):
        importlib.import_module(module)
