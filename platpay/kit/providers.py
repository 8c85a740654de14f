"""Provider slots: how platpay reaches the outside world (FX rates, payout rails, UMA counterparties, and
next a KYC provider, a card issuer, an email sender, custody).

A domain that needs something from outside declares, in its `providers.py`:

1. a `Protocol` saying what it needs (`RateProvider`, `PayoutRail`, ...), in domain terms;
2. a `Slot` for it, named after its setting: `RATES = Slot[RateProvider]("fx_rate_provider")` reads
   `PLATPAY_FX_RATE_PROVIDER`;
3. implementations registered on the slot by name: `@RATES.implementation("sandbox")` on a factory taking
   the Settings. The sandbox implementation is always there and is the default; it is where sandbox
   behaviour (magic values, delays) lives, so production code paths carry no sandbox branches. A slot
   whose default depends on other settings takes a function of the Settings naming it
   (`Slot("email_sender", default=lambda s: "smtp" if s.smtp_host else "none")`).

Domain code calls `RATES.get()` and never knows which implementation runs. The app, the worker and the
tests call `configure_all(settings)` at startup; a setting naming no registered implementation may name a
factory by import path (`package.module:factory`), so an adapter can live outside this repository.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from platpay.config import Settings

P = TypeVar("P")
Factory = Callable[[Settings], Any]
DefaultName = str | Callable[[Settings], str]

_SLOTS: list[Slot[Any]] = []
# The process's settings (startup: configure_all, or use_settings where no domain is loaded, as in the CLI's
# commands): a slot not configured from them (registered later) makes its default implementation from them.
_started: Settings | None = None


class ProviderNotFound(LookupError):
    pass


class Slot(Generic[P]):
    def __init__(self, setting: str, *, default: DefaultName = "sandbox") -> None:
        self.setting = setting
        self.default = default
        self._factories: dict[str, Factory] = {}
        self._current: P | None = None
        self._settings: Settings | None = (
            None  # the ones `configure` chose with: the default's, after use(None)
        )
        _SLOTS.append(self)

    def implementation(self, name: str) -> Callable[[Factory], Factory]:
        def register(factory: Factory) -> Factory:
            self._factories[name] = factory
            return factory

        return register

    def names(self) -> list[str]:
        return sorted(self._factories)

    def default_name(self, settings: Settings) -> str:
        """The implementation chosen when the setting is unset."""
        return self.default(settings) if callable(self.default) else self.default

    def configure(self, settings: Settings) -> P:
        choice = str(getattr(settings, self.setting, None) or self.default_name(settings))
        factory = self._factories.get(choice)
        if factory is None and ":" in choice:
            module, _, attribute = choice.partition(":")
            factory = getattr(importlib.import_module(module), attribute)
        if factory is None:
            raise ProviderNotFound(
                f"PLATPAY_{self.setting.upper()}={choice!r}: not one of {self.names()} "
                "and not an import path like package.module:factory"
            )
        self._current = factory(settings)
        self._settings = settings
        return self._current

    def use(self, implementation: P | None) -> None:
        """Put an implementation in place (tests, plugins); None goes back to the default at next get()."""
        self._current = implementation

    def get(self) -> P:
        if self._current is None:
            settings = self._settings or _started
            if settings is None:
                raise RuntimeError(
                    f"provider slot {self.setting!r} used before configure_all(settings) (domains.start)"
                )
            self._current = self._factories[self.default_name(settings)](settings)
        return self._current


def configure_all(settings: Settings) -> None:
    """Choose every slot's implementation from the settings (startup; raises on an unknown name)."""
    use_settings(settings)
    for slot in _SLOTS:
        slot.configure(settings)


def use_settings(settings: Settings) -> None:
    """The process's settings, for the slots' default implementations (see `_started`)."""
    global _started
    _started = settings
