"""kit.states: a machine built from a StrEnum and a table allows exactly the table's moves."""

from __future__ import annotations

from enum import StrEnum

import pytest

from platpay.kit.states import IllegalTransition, StateMachine


class Door(StrEnum):
    OPEN = "OPEN"
    CLOSED = "CLOSED"
    LOCKED = "LOCKED"
    GONE = "GONE"
    UNUSED = "UNUSED"


DOOR = StateMachine(
    "door",
    Door,
    {
        Door.OPEN: {Door.CLOSED, Door.OPEN},
        Door.CLOSED: {Door.OPEN, Door.LOCKED, Door.GONE},
        Door.LOCKED: {Door.CLOSED},
    },
    initial={Door.OPEN},
)


class Light(StrEnum):
    OFF = "OFF"
    ON = "ON"
    BROKEN = "BROKEN"


class Press(StrEnum):
    FLIP = "FLIP"
    SMASH = "SMASH"


LIGHT = StateMachine(
    "light",
    Light,
    triggers={
        (Light.OFF, Press.FLIP): Light.ON,
        (Light.ON, Press.FLIP): Light.OFF,
        (Light.ON, Press.SMASH): Light.BROKEN,
        (Light.OFF, Press.SMASH): Light.BROKEN,
    },
    initial={Light.OFF},
)


class TestMoves:
    def test_a_legal_move_returns_the_member(self):
        moved = DOOR.move("CLOSED", Door.LOCKED)
        assert moved is Door.LOCKED and moved == "LOCKED"  # a StrEnum equals its text
        assert DOOR.move(Door.OPEN, "CLOSED") is Door.CLOSED  # either side may be the column's text

    def test_a_state_may_move_to_itself_only_when_listed(self):
        assert DOOR.move(Door.OPEN, Door.OPEN) is Door.OPEN
        with pytest.raises(IllegalTransition):
            DOOR.move(Door.CLOSED, Door.CLOSED)

    def test_an_illegal_move_raises_and_names_it(self):
        with pytest.raises(IllegalTransition) as raised:
            DOOR.move(Door.OPEN, Door.LOCKED, subject="Door:1")
        assert str(raised.value) == "door Door:1: no move from OPEN to LOCKED"
        assert (raised.value.current, raised.value.target) == ("OPEN", "LOCKED")
        assert isinstance(raised.value, RuntimeError)  # an internal error, not an API error

    @pytest.mark.parametrize("current", [None, "", "open", "NOPE", "UNUSED"])
    def test_from_an_unknown_state_nothing_is_legal(self, current):
        assert DOOR.targets(current) == frozenset()
        with pytest.raises(IllegalTransition):
            DOOR.move(current, Door.OPEN)

    def test_to_a_state_outside_the_machine_is_illegal(self):
        with pytest.raises(IllegalTransition):
            DOOR.move(Door.CLOSED, "UNUSED")  # type: ignore[arg-type]
        with pytest.raises(IllegalTransition):
            DOOR.move(Door.CLOSED, "WIDE_OPEN")  # type: ignore[arg-type]


class TestTerminal:
    def test_terminal_states_are_derived(self):
        assert DOOR.terminal == {Door.GONE}
        assert DOOR.is_terminal("GONE") and not DOOR.is_terminal(Door.LOCKED)

    def test_a_terminal_state_is_final(self):
        for target in Door:
            with pytest.raises(IllegalTransition):
                DOOR.move(Door.GONE, target)

    def test_the_machine_holds_the_states_it_uses_and_what_it_reaches(self):
        assert DOOR.states == {Door.OPEN, Door.CLOSED, Door.LOCKED, Door.GONE}  # not UNUSED
        assert DOOR.reachable() == DOOR.states
        assert DOOR.can_move("LOCKED", "CLOSED") and not DOOR.can_move("LOCKED", "OPEN")


class TestTriggers:
    def test_fire_follows_the_table(self):
        assert LIGHT.fire("OFF", Press.FLIP) is Light.ON
        assert LIGHT.fire(Light.ON, "FLIP") is Light.OFF
        assert LIGHT.fire(Light.ON, Press.SMASH) is Light.BROKEN

    def test_a_trigger_that_does_not_apply_raises(self):
        with pytest.raises(IllegalTransition) as raised:
            LIGHT.fire(Light.BROKEN, Press.FLIP, subject="Light:1")
        assert str(raised.value) == "light Light:1: no move from BROKEN on FLIP"
        with pytest.raises(IllegalTransition):
            LIGHT.fire(None, Press.FLIP)

    def test_moves_and_terminal_states_come_from_the_triggers(self):
        assert LIGHT.targets(Light.ON) == {Light.OFF, Light.BROKEN}
        assert LIGHT.terminal == {Light.BROKEN}
        assert LIGHT.move(Light.OFF, Light.ON) is Light.ON


class TestDefinition:
    def test_moves_or_triggers_not_both_nor_neither(self):
        with pytest.raises(ValueError, match="either"):
            StateMachine("x", Door, initial={Door.OPEN})
        with pytest.raises(ValueError, match="either"):
            StateMachine("x", Light, {}, triggers={(Light.OFF, "FLIP"): Light.ON}, initial={Light.OFF})

    def test_states_must_be_members_of_the_enum(self):
        with pytest.raises(ValueError, match="not Door members"):
            StateMachine("x", Door, {Door.OPEN: {Light.ON}}, initial={Door.OPEN})  # type: ignore[dict-item]
