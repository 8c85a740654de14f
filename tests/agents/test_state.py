"""The agent action's lifecycle as data (agents/state.py)."""

from __future__ import annotations

import pytest

from platpay.agents.state import ACTION, ActionStatus
from platpay.kit.states import IllegalTransition


def test_the_table_is_the_documented_lifecycle() -> None:
    assert ACTION.initial == {ActionStatus.PENDING_APPROVAL, ActionStatus.APPROVED}
    assert ACTION.reachable() == set(ActionStatus)
    assert ACTION.terminal == {ActionStatus.APPROVED, ActionStatus.REJECTED, ActionStatus.FAILED}


@pytest.mark.parametrize("decided", [ActionStatus.APPROVED, ActionStatus.REJECTED, ActionStatus.FAILED])
def test_a_decided_action_never_moves(decided: ActionStatus) -> None:
    for target in ActionStatus:
        with pytest.raises(IllegalTransition):
            ACTION.move(decided, target)
