"""Invitation errors: each class carries its code and HTTP status (INTERFACE-FACTS §1.2–1.3)."""

from __future__ import annotations

from platpay.errors import Forbidden, InvalidInput, ResourceNotFound


class InvitationNotFound(ResourceNotFound):
    code = "INVITATION_NOT_FOUND"
    resource, id_key = "invitation", "invitationCode"


class InvitationAlreadyClaimed(InvalidInput):
    code = "INVITATION_ALREADY_CLAIMED"


class InvitationCancelled(InvalidInput):
    code = "INVITATION_CANCELLED"


class InvitationExpired(InvalidInput):
    """Beyond the reference's codes (docs/errors.md): claiming or cancelling an invitation past its expiresAt."""

    code = "INVITATION_EXPIRED"


class NotTheInvitingPlatform(Forbidden):
    """Cancelling an invitation another platform created."""

    code = "FORBIDDEN"
