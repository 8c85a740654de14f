"""What a domain package says about itself, in its `domain.py`, for the app to discover.

A domain package `platpay/<name>/` with a `domain.py` module holding `DOMAIN = Domain(...)` is found by
`platpay.domains` at startup: its routers are served, its job handlers registered, its event types known
and its tables part of the schema. Adding a domain edits no central list; see docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from fastapi import APIRouter

if TYPE_CHECKING:
    from platpay.config import Settings


@dataclass(frozen=True)
class Mount:
    """A router the app serves. Where paths overlap, the app tries the more specific first, whichever domain
    or router it comes from (`kit.routing.by_specificity`): `/customers/internal-accounts` before
    `/customers/{customerId}`."""

    router: APIRouter


@dataclass(frozen=True)
class Domain:
    name: str
    routers: tuple[Mount, ...] = ()
    # Modules defining the domain's tables and its job handlers: importing them registers them (the
    # declarative Base, `jobs.registry.handler`); `domain.py` imports them and lists them here.
    models: tuple[ModuleType, ...] = ()
    jobs: tuple[ModuleType, ...] = ()
    # Modules registering implementations on provider slots (kit/providers.py), the sandbox's included.
    providers: tuple[ModuleType, ...] = ()
    # Webhook event types the domain emits (`events.service.emit` refuses any other).
    event_types: frozenset[str] = frozenset()
    # Paths taking larger bodies than PLATPAY_MAX_BODY_BYTES (uploads): path -> limit in bytes.
    body_limits: Callable[[Settings], dict[str, int]] | None = None
