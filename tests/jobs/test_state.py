"""A job's lifecycle as data (jobs/state.py): QUEUED -> RUNNING -> DONE | DEAD, back to QUEUED to retry."""

from __future__ import annotations

import pytest

from platpay.jobs import repository
from platpay.jobs.state import JOB, JobState
from platpay.kit.states import IllegalTransition


def test_the_job_lifecycle_is_the_documented_one():
    assert JOB.reachable() == set(JobState)
    assert JOB.initial == {JobState.QUEUED}
    assert JOB.terminal == {JobState.DONE, JobState.DEAD}
    assert JOB.can_move(JobState.RUNNING, JobState.QUEUED)  # a retry
    assert JOB.can_move(JobState.RUNNING, JobState.RUNNING)  # an expired lease claimed again


def test_the_repository_writes_the_enum_members():
    assert tuple(JobState) == (repository.QUEUED, repository.RUNNING, repository.DONE, repository.DEAD)


@pytest.mark.parametrize("current", [JobState.DONE, JobState.DEAD])
def test_a_finished_job_never_moves(current):
    with pytest.raises(IllegalTransition):
        JOB.move(current, JobState.QUEUED, subject="Job:x")
