"""The state machines of accounts (kit/states.py): an internal account's status and an external account's.

Internal accounts open ACTIVE when their deposit details are issued at once (every account of the
`immediate` provider, and the sandbox's but for its magic values), or PENDING while the institution
provisions them (accounts/provisioning.py), which ends ACTIVE or FAILED. A deleted customer's accounts close.

External accounts are ACTIVE at registration unless the account provider holds them for a review
(PENDING, UNDER_REVIEW) or, for a FIRST_PARTY self-custody wallet, for ownership verification
(PENDING_OWNERSHIP_VERIFICATION, which ends ACTIVE or, when the attempt fails, UNVERIFIED: a new
ownership challenge, not served yet, would start it again). Only ACTIVE accounts receive payouts.
"""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class InternalAccountStatus(StrEnum):
    PENDING = "PENDING"
    ACTIVE = "ACTIVE"
    FROZEN = "FROZEN"
    CLOSED = "CLOSED"
    FAILED = "FAILED"


_I = InternalAccountStatus

INTERNAL_ACCOUNT = StateMachine(
    "internal account",
    InternalAccountStatus,
    {
        _I.PENDING: {_I.ACTIVE, _I.FAILED, _I.CLOSED},
        _I.ACTIVE: {_I.FROZEN, _I.CLOSED},
        _I.FROZEN: {_I.ACTIVE, _I.CLOSED},
        _I.FAILED: {_I.CLOSED},  # its customer deleted
    },
    initial={_I.ACTIVE, _I.PENDING},
)

# The statuses whose deposit details exist: a PENDING account has none yet, a FAILED one never will.
HAS_DEPOSIT_DETAILS = frozenset({_I.ACTIVE, _I.FROZEN, _I.CLOSED})


class InternalAccountType(StrEnum):
    """What an internal account holds (internal_accounts.type): a closed set, no machine."""

    INTERNAL_FIAT = "INTERNAL_FIAT"
    INTERNAL_CRYPTO = "INTERNAL_CRYPTO"
    EMBEDDED_WALLET = "EMBEDDED_WALLET"  # a self-custody wallet the customer signs for (wallets/)


class ExternalAccountStatus(StrEnum):
    PENDING = "PENDING"
    ACTIVE = "ACTIVE"
    PENDING_OWNERSHIP_VERIFICATION = "PENDING_OWNERSHIP_VERIFICATION"
    UNVERIFIED = "UNVERIFIED"
    UNDER_REVIEW = "UNDER_REVIEW"
    INACTIVE = "INACTIVE"


class BeneficiaryVerificationStatus(StrEnum):
    """The name check of an external account's beneficiary at registration (its result, it does not move)."""

    MATCHED = "MATCHED"
    PARTIAL_MATCH = "PARTIAL_MATCH"
    NOT_MATCHED = "NOT_MATCHED"
    UNSUPPORTED = "UNSUPPORTED"  # no name-check provider (production, for now)
    CHECKED_BY_RECEIVING_FI = "CHECKED_BY_RECEIVING_FI"
    PENDING = "PENDING"


_E = ExternalAccountStatus

EXTERNAL_ACCOUNT = StateMachine(
    "external account",
    ExternalAccountStatus,
    {
        _E.PENDING: {_E.ACTIVE, _E.UNDER_REVIEW, _E.INACTIVE},
        _E.UNDER_REVIEW: {_E.ACTIVE, _E.INACTIVE},
        _E.PENDING_OWNERSHIP_VERIFICATION: {_E.ACTIVE, _E.UNVERIFIED},
        _E.UNVERIFIED: {_E.PENDING_OWNERSHIP_VERIFICATION},  # a new ownership challenge
        _E.ACTIVE: {_E.INACTIVE},  # the institution reports it closed or blocked
    },
    initial={_E.ACTIVE, _E.PENDING, _E.UNDER_REVIEW, _E.PENDING_OWNERSHIP_VERIFICATION},
)
