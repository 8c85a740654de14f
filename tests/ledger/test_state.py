"""The ledger's closed sets (ledger/state.py): a hold OPEN until nothing of it remains (CLOSED)."""

from __future__ import annotations

import pytest

from platpay.kit.states import IllegalTransition
from platpay.ledger import service as ledger
from platpay.ledger.state import HOLD, Bucket, HoldStatus, LedgerAccountKind


def test_the_hold_lifecycle_is_the_documented_one():
    assert HOLD.reachable() == set(HoldStatus)
    assert HOLD.initial == {HoldStatus.OPEN}
    assert HOLD.terminal == {HoldStatus.CLOSED}
    assert HOLD.can_move(HoldStatus.OPEN, HoldStatus.OPEN)  # a partial capture or release
    with pytest.raises(IllegalTransition):
        HOLD.move(HoldStatus.CLOSED, HoldStatus.OPEN, subject="Hold:x")


def test_the_service_names_are_the_enum_members():
    assert tuple(Bucket) == (ledger.AVAILABLE, ledger.HELD)
    kinds = (
        ledger.INTERNAL,
        ledger.CLEARING,
        ledger.FX,
        ledger.FEES,
        ledger.SANDBOX_FUNDING,
        ledger.PLATFORM_FEES,
        ledger.LOSS,
    )
    assert kinds == tuple(LedgerAccountKind)
