"""The state machine of an UMA invitation (SPEC §3, INTERFACE-FACTS §8): PENDING until it is claimed,
cancelled by its platform, or its expiresAt passes; every other state is terminal."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class InvitationStatus(StrEnum):
    PENDING = "PENDING"
    CLAIMED = "CLAIMED"  # an invitee UMA address claimed it (INVITATION_CLAIMED to the creating platform)
    CANCELLED = "CANCELLED"  # the creating platform cancelled it
    EXPIRED = "EXPIRED"  # its expiresAt passed while PENDING (the expiry job)


_I = InvitationStatus

INVITATION = StateMachine(
    "invitation",
    InvitationStatus,
    {_I.PENDING: {_I.CLAIMED, _I.CANCELLED, _I.EXPIRED}},
    initial={_I.PENDING},
)
