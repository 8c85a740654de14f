"""A quote's status machine (payments/quotes/state.py): the lifecycle of INTERFACE-FACTS §8, every status
the API shows reachable, the final ones final, and the service refusing a move the table lacks."""

from __future__ import annotations

from typing import get_args

import pytest

from platpay.kit.states import IllegalTransition
from platpay.payments.quotes import schemas
from platpay.payments.quotes.state import QUOTE, QuoteStatus

Q = QuoteStatus


def test_the_table_is_the_documented_lifecycle() -> None:
    assert set(QuoteStatus) == set(get_args(schemas.QuoteStatus))
    assert QUOTE.reachable() == set(QuoteStatus)
    assert QUOTE.terminal == {Q.FAILED, Q.EXPIRED}
    assert QUOTE.targets(Q.PENDING) == {Q.PROCESSING, Q.EXPIRED, Q.FAILED}
    assert QUOTE.targets(Q.COMPLETED) == {Q.FAILED}  # a returned payout, nothing else


@pytest.mark.parametrize("current", [Q.EXPIRED, Q.FAILED])
@pytest.mark.parametrize("target", list(QuoteStatus))
def test_a_final_quote_never_moves(current: QuoteStatus, target: QuoteStatus) -> None:
    with pytest.raises(IllegalTransition, match="quote Quote:x: no move from"):
        QUOTE.move(current, target, subject="Quote:x")


def test_an_executed_quote_cannot_expire_or_go_back() -> None:
    for target in (Q.PENDING, Q.EXPIRED):
        with pytest.raises(IllegalTransition):
            QUOTE.move(Q.PROCESSING, target)
