"""Cards errors: each class carries its code and HTTP status (INTERFACE-FACTS §1.2–1.3)."""

from __future__ import annotations

from platpay.errors import Conflict, InvalidInput, NotFound


class CardNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"


class CardTransactionNotFound(NotFound):
    code = "TRANSACTION_NOT_FOUND"


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
