"""State machines as data: a StrEnum of states and a transition table, checked by one `move` (or `fire`).

How a domain adds a machine (payments/state.py is the example to copy):

1. In `<domain>/state.py`, a StrEnum of the states, its values exactly what the status column and the API
   hold (a StrEnum member equals its string, so rows, filters and response bodies do not change):

       class QuoteStatus(StrEnum):
           PENDING = "PENDING"
           ...

2. Beside it, the machine: the table of allowed moves (state -> the states it may move to), or of triggers
   ((state, trigger) -> next state) where the domain names its events, and the states a new row starts in.
   Terminal states are derived: a state with no move out of it.

       QUOTE = StateMachine(
           "quote",
           QuoteStatus,
           {QuoteStatus.PENDING: {QuoteStatus.PROCESSING, QuoteStatus.EXPIRED}, ...},
           initial={QuoteStatus.PENDING},
       )

3. Every status change of the entity goes through it: `row.status = QUOTE.move(row.status, QuoteStatus.X,
   subject=row.id)` (`QUOTE.fire(state, trigger)` for a trigger table); every literal becomes an enum member.
4. A test that the table is the lifecycle the domain documents (every state reachable from an initial one,
   the terminal ones the documented ones) and that an illegal move through the real service raises.

A move the table does not allow raises IllegalTransition. It is not an API error: callers lock the row and
check its state before moving it, answering a request that lost a race with their own 409 (or, in a job,
doing nothing); a move that still reaches the machine illegally is a bug, reported as a 500 like any other
unexpected exception (and a job raising it is retried by the runner, then given up).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Generic, TypeVar

S = TypeVar("S", bound=StrEnum)


class IllegalTransition(RuntimeError):
    """A state change the machine's table does not allow: a bug, or a race its caller failed to rule out."""

    def __init__(
        self,
        machine: str,
        current: str | None,
        *,
        target: str | None = None,
        trigger: str | None = None,
        subject: str | None = None,
    ) -> None:
        what = f"{machine} {subject}" if subject else machine
        step = f"on {trigger}" if trigger is not None else f"to {target}"
        super().__init__(f"{what}: no move from {current} {step}")
        self.machine, self.current, self.target, self.trigger, self.subject = (
            machine,
            current,
            target,
            trigger,
            subject,
        )


class StateMachine(Generic[S]):
    """One entity's lifecycle: the states of `states` it uses and the moves between them.

    `moves`: state -> the states it may move to (a state may list itself: a repeated step that is allowed).
    `triggers`: (state, trigger) -> next state, for a domain that names what moves it; give one or the other.
    `initial`: the states a new row may be created in.
    """

    def __init__(
        self,
        name: str,
        states: type[S],
        moves: Mapping[S, Iterable[S]] | None = None,
        *,
        triggers: Mapping[tuple[S, str], S] | None = None,
        initial: Iterable[S],
    ) -> None:
        if (moves is None) == (triggers is None):
            raise ValueError(f"{name}: give either moves or triggers")
        self.name = name
        self.enum = states
        self.triggers: dict[tuple[S, str], S] = dict(triggers or {})
        table: dict[S, frozenset[S]] = {}
        if moves is not None:
            table = {state: frozenset(targets) for state, targets in moves.items()}
        for (state, _), target in self.triggers.items():
            table[state] = table.get(state, frozenset()) | {target}
        self.moves: dict[S, frozenset[S]] = table
        self.initial: frozenset[S] = frozenset(initial)
        used = set(self.initial) | set(table) | {t for targets in table.values() for t in targets}
        strangers = [state for state in used if not isinstance(state, states)]
        if strangers:
            raise ValueError(f"{name}: {strangers} are not {states.__name__} members")
        self.states: frozenset[S] = frozenset(used)
        self.terminal: frozenset[S] = frozenset(s for s in used if not table.get(s))

    def state(self, value: str | None) -> S | None:
        """`value` (a column's text) as a member of the machine's states, None if it is not one."""
        if value is None:
            return None
        try:
            member = self.enum(value)
        except ValueError:
            return None
        return member if member in self.states else None

    def targets(self, current: str | None) -> frozenset[S]:
        """Where `current` may move to (nothing from a terminal or unknown state)."""
        state = self.state(current)
        return self.moves.get(state, frozenset()) if state is not None else frozenset()

    def can_move(self, current: str | None, target: str) -> bool:
        return self.state(target) in self.targets(current)

    def is_terminal(self, current: str | None) -> bool:
        return self.state(current) in self.terminal

    def move(self, current: str | None, target: S, *, subject: str | None = None) -> S:
        """`target`, if the table allows moving there from `current`; else IllegalTransition."""
        member = self.state(target)
        if member is None or member not in self.targets(current):
            raise IllegalTransition(self.name, current, target=target, subject=subject)
        return member

    def fire(self, current: str | None, trigger: str, *, subject: str | None = None) -> S:
        """The state `trigger` moves `current` to; IllegalTransition if it does not apply there."""
        state = self.state(current)
        target = self.triggers.get((state, trigger)) if state is not None else None
        if target is None:
            raise IllegalTransition(self.name, current, trigger=trigger, subject=subject)
        return target

    def reachable(self) -> frozenset[S]:
        """Every state some sequence of moves reaches from an initial state."""
        seen, frontier = set(self.initial), list(self.initial)
        while frontier:
            for target in self.moves.get(frontier.pop(), frozenset()):
                if target not in seen:
                    seen.add(target)
                    frontier.append(target)
        return frozenset(seen)
