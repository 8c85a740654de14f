"""Discovers the domain packages: every `platpay/<name>/domain.py` holding a `DOMAIN` (kit.domain_spec.Domain).

The app, the worker, migrations and the tests call `load()` once; it imports each domain module (which
imports its models, routers and job handlers), registers the domains' webhook event types, and returns the
domains in package-name order. Nothing here names a domain.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from functools import cache

import platpay
from platpay.config import Settings
from platpay.errors import ApiError
from platpay.events import types as event_types
from platpay.jobs import registry
from platpay.jobs import service as jobs_service
from platpay.kit import providers
from platpay.kit.crypto import sealing
from platpay.kit.domain_spec import Domain, Mount


@cache
def load() -> tuple[Domain, ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(platpay.__path__), key=lambda info: info.name):
        if not info.ispkg or importlib.util.find_spec(f"platpay.{info.name}.domain") is None:
            continue
        domain = importlib.import_module(f"platpay.{info.name}.domain").DOMAIN
        if not isinstance(domain, Domain):
            raise TypeError(f"platpay.{info.name}.domain.DOMAIN is not a kit.domain_spec.Domain")
        event_types.register(domain.event_types)
        found.append(domain)
    return tuple(found)


def mounts() -> list[Mount]:
    """Every domain's routers, in discovery order (the app orders their routes: kit/routing.py)."""
    return [mount for domain in load() for mount in domain.routers]


def body_limits(settings: Settings) -> dict[str, int]:
    limits: dict[str, int] = {}
    for domain in load():
        if domain.body_limits is not None:
            limits.update(domain.body_limits(settings))
    return limits


def start(settings: Settings) -> None:
    """What every process (server, worker, tests) does before serving: discover the domains, register
    their job handlers and the job plugins, and choose each provider slot's implementation."""
    load_jobs(settings.job_plugins)
    wire(settings)
    providers.configure_all(settings)


def wire(settings: Settings) -> None:
    """What the process shares, from its settings (also the CLI's, for commands that start no domain): the
    settings provider slots make their defaults from, the jobs' default attempts, the master key."""
    providers.use_settings(settings)
    jobs_service.configure(settings)
    sealing.use_master_key(settings.master_key, settings.var_dir)


def load_jobs(plugins: str = "") -> None:
    """Every domain's job handlers, and the plugin modules named in PLATPAY_JOB_PLUGINS."""
    load()
    registry.load_plugins(plugins)


def error_codes() -> dict[int, set[str]]:
    """Every code an error of each HTTP status can carry: the codes of platpay's ApiError classes (each in its
    domain's errors.py, or the foundation's), every domain's errors module imported first so that the answer
    does not depend on which modules happen to be imported already. The document's `Error<status>` schemas
    enumerate them."""
    load()
    for info in pkgutil.walk_packages(platpay.__path__, "platpay."):
        if info.name.rsplit(".", 1)[-1] == "errors":
            importlib.import_module(info.name)
    codes: dict[int, set[str]] = {}
    pending: list[type[ApiError]] = [ApiError]
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("platpay."):
            codes.setdefault(cls.status, set()).add(cls.code)
        pending.extend(cls.__subclasses__())
    return codes
