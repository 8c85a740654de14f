"""Hook points: how a lower domain lets domains above it act on its events without importing them
(docs/architecture.md, Layers). The lower domain declares typed hook points in its `hooks.py` and fires
them inside the caller's transaction; the higher domain subscribes at import of its service module."""

from __future__ import annotations

from typing import Generic, TypeVar

Subscriber = TypeVar("Subscriber")


class HookPoint(Generic[Subscriber]):
    """An in-process list of callbacks for one event of the domain. A hook point that must be answered
    (`required`) and has no subscriber raises when fired: the process never imported the domain that
    answers it, and skipping it would leave the data half made."""

    def __init__(self, name: str, *, required: str, subscriber_module: str) -> None:
        self.name = name
        self.required = required  # what the subscriber does, for the error when there is none
        self.subscriber_module = subscriber_module  # where the subscriber lives, for that error
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Subscriber:
        """Register `subscriber` (once; usable as a decorator)."""
        if subscriber not in self._subscribers:
            self._subscribers.append(subscriber)
        return subscriber

    def subscribers(self) -> tuple[Subscriber, ...]:
        """The subscribers, in registration order; RuntimeError if there is none."""
        if not self._subscribers:
            raise RuntimeError(
                f"{self.name} has no subscriber: nothing would {self.required}. Import the domain that "
                f"subscribes to it ({self.subscriber_module}) first (platpay.domains.load() imports every domain)."
            )
        return tuple(self._subscribers)
