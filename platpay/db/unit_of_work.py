"""What code running in a unit of work may count on, typed (docs/architecture.md, "The fast path").

`LeanSession`: the part of a session that lean statements (`platpay.db.lean`) and the commit hooks use. Both
an ORM `AsyncSession` (`Database.transaction()`) and a `LeanTransaction` (`Database.lean_transaction()` on
PostgreSQL: a transaction straight on a driver connection, no ORM session) have it, so a function that runs
only lean statements takes a `LeanSession`, and one that needs the ORM takes an `AsyncSession`: a signature
says which transaction it can run in.

`LeanFirst`: an operation with a fast attempt and a careful one, for a path that decides on a snapshot and
takes its hot row's lock last (a card authorization). Its runner (the idempotent runner, `JobContext.run`)
runs `lean` in a lean transaction (the idempotent runner, with an Idempotency-Key: the lean transaction
that claims and stores the key); when that raises `Raced` (the snapshot was overtaken by a concurrent
transaction: its writes must not commit) the transaction is rolled back and `careful` runs in an ordinary
one. Which attempt runs is the runner's business, so no service signature carries a statement order or a
"lean" flag.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

T = TypeVar("T")


class LeanSession(Protocol):
    """A unit of work as lean statements see it: its `info` (the driver of its transaction, and what the
    transaction records for the commit hooks: jobs queued, ids read). `AsyncSession` and `LeanTransaction`
    both are one."""

    @property
    def info(self) -> dict[Any, Any]: ...


class Raced(Exception):
    """A `LeanFirst`'s lean attempt found what it decided on changed by a concurrent transaction: it has
    writes that must not commit. The runner rolls the transaction back and runs the careful attempt."""


@dataclass(frozen=True, slots=True)
class LeanFirst(Generic[T]):
    """One operation, two attempts with one outcome: `lean` (lean statements only, may raise `Raced`) in a
    lean transaction, then, raced, `careful` in an ordinary one."""

    lean: Callable[[LeanSession], Awaitable[T]]
    careful: Callable[[AsyncSession], Awaitable[T]]

    @classmethod
    def same(cls, service: Callable[..., Awaitable[T]], /, **arguments: Any) -> LeanFirst[T]:
        """`service(session, **arguments)` as both attempts: a service whose statements are all lean and
        that raises `Raced` where it needs the ORM (a transfer to a sandbox account that fails at once)."""

        async def attempt(session: LeanSession) -> T:
            return await service(session, **arguments)

        return cls(lean=attempt, careful=attempt)


def orm_session(session: LeanSession) -> AsyncSession:
    """`session` where a step needs the ORM (a read through models): a LeanTransaction is refused loudly, never
    passed on as what it is not."""
    if not isinstance(session, AsyncSession):
        raise TypeError("this step needs an ORM session; it was given a lean transaction")
    return session
