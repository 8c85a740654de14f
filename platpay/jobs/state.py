"""The state machine of a job (kit/states.py): QUEUED (due at run_at) -> RUNNING (leased) -> DONE | DEAD.

A RUNNING job goes back to QUEUED when its handler asks to run later or its attempt failed with attempts left,
and to DEAD when none are left; one whose lease expired is claimed again (RUNNING -> RUNNING) or, on its last
attempt, buried (DEAD). A QUEUED job whose work was given up is marked DONE without running.
"""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class JobState(StrEnum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    DONE = "DONE"
    DEAD = "DEAD"


_J = JobState

JOB = StateMachine(
    "job",
    JobState,
    {
        _J.QUEUED: {_J.RUNNING, _J.DONE},
        _J.RUNNING: {_J.RUNNING, _J.QUEUED, _J.DONE, _J.DEAD},
    },
    initial={_J.QUEUED},
)
