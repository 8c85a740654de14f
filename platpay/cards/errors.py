"""Cards errors: each class carries its code and HTTP status (INTERFACE-FACTS §1.2–1.3)."""

from __future__ import annotations

from platpay.errors import Conflict, InvalidInput, NotFound, ResourceNotFound


class CardNotFound(ResourceNotFound):
    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "card", "cardId"


class CardTransactionNotFound(ResourceNotFound):
    code = "TRANSACTION_NOT_FOUND"
    resource, id_key = "card transaction", "cardTransactionId"


class CardSimulationsUnavailable(NotFound):
    """INTERFACE-FACTS §1.3: the card simulations answer 404 in production (their paths do not exist there),
    whatever the card."""

    code = "REFERENCE_NOT_FOUND"


class EmbedTokenNotFound(NotFound):
    """A card page URL whose token names no live card (the token is the secret: never echoed)."""

    code = "REFERENCE_NOT_FOUND"


class CardholderKycNotApproved(InvalidInput):
    code = "CARDHOLDER_KYC_NOT_APPROVED"


class FundingSourceIneligible(InvalidInput):
    code = "FUNDING_SOURCE_INELIGIBLE"


class InvalidStateTransition(Conflict):
    code = "INVALID_STATE_TRANSITION"


class CardAlreadyClosed(Conflict):
    code = "CARD_ALREADY_CLOSED"


class CardNotMutable(Conflict):
    """A change to a closed card (INTERFACE-FACTS §1.3); a card still being issued may have its sources
    changed, and a state move from PENDING_ISSUE is INVALID_STATE_TRANSITION."""

    code = "CARD_NOT_MUTABLE"


class CardTransactionConflict(Conflict):
    """A clearing or return the card transaction's status does not take (a return above what is left)."""
