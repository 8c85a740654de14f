"""A card refund's lifecycle as data (cards/state.py): COMPLETED, then REVERSED if a return reversal undoes it."""

from __future__ import annotations

import pytest

from platpay.cards.state import CARD_REFUND, CardRefundStatus
from platpay.kit.states import IllegalTransition


def test_the_card_refund_lifecycle_is_the_documented_one():
    assert CARD_REFUND.reachable() == set(CardRefundStatus)
    assert CARD_REFUND.initial == {CardRefundStatus.COMPLETED}
    assert CARD_REFUND.terminal == {CardRefundStatus.REVERSED}


def test_a_reversed_refund_is_not_reversed_again():
    with pytest.raises(IllegalTransition):
        CARD_REFUND.move(CardRefundStatus.REVERSED, CardRefundStatus.REVERSED, subject="CardRefund:x")
