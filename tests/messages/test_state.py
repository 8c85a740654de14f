"""A message's lifecycle as data (messages/state.py): QUEUED until SENT or FAILED, both final."""

from __future__ import annotations

import pytest

from platpay.kit.states import IllegalTransition
from platpay.messages.state import MESSAGE, MessageStatus


def test_the_message_lifecycle_is_the_documented_one():
    assert MESSAGE.reachable() == set(MessageStatus)
    assert MESSAGE.initial == {MessageStatus.QUEUED}
    assert MESSAGE.terminal == {MessageStatus.SENT, MessageStatus.FAILED}


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (MessageStatus.SENT, MessageStatus.QUEUED),
        (MessageStatus.FAILED, MessageStatus.SENT),
        (MessageStatus.SENT, MessageStatus.FAILED),
    ],
)
def test_a_finished_message_never_moves(current, target):
    with pytest.raises(IllegalTransition):
        MESSAGE.move(current, target, subject="Message:x")
