"""Authorization decisioning: `decide(card, sources, request) -> Decision`, pure (no I/O, no clock).

The service reads a snapshot (the card, its funding sources in priority order with their available
balances) and asks `decide`; an approval names the source to hold on (to pull from, to credit). The
snapshot may be stale by the time the money moves: a hold or pull is a conditional UPDATE that refuses
rather than overdraw, and on refusal the service asks again with that source marked as spent (`without`),
so a race never approves more than the money there is and never declines while a later source could pay.

What the network asks (`Purpose`): a PURCHASE (an authorization, a financial authorization) spends from a
source; an INQUIRY (a balance inquiry, always 0) spends nothing; a CREDIT (a credit authorization, its advice,
a financial credit) puts money on a source. An `advice` records what the network already approved: it is
not declined for the network's verdict or the card's state, only when there is nowhere to put it.

Order of the checks (the first that applies decides):
1. the network's own verdict (sandbox descriptor suffixes 002 / 003): declined with its reason;
2. the card: FROZEN → CARD_PAUSED, CLOSED → CARD_CLOSED, not yet issued → CARD_NOT_ACTIVE;
3. the currency: the card's, or the fiat currency the card's stablecoin tracks (`in_card_currency`); any
   other → CURRENCY_MISMATCH;
4. a PURCHASE above the card's maxSpendPerTransaction, compared in the card's currency (after 3's
   conversion; exactly the limit is allowed) → TRANSACTION_SIZE_LIMIT_EXCEEDED (the reference's name of
   "the amount exceeds the maximum single-transaction amount");
5. the sources in order: for a PURCHASE the first ACTIVE one in the card's currency whose available
   balance covers the amount in the card's currency, none → INSUFFICIENT_FUNDS (also when the card has no
   source left); for an INQUIRY the first ACTIVE one in the card's currency, none → INSUFFICIENT_FUNDS; for
   a CREDIT the first ACTIVE one in the card's currency, none → NO_ACTIVE_FUNDING_SOURCE.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from platpay.accounts.state import InternalAccountStatus
from platpay.cards.state import CardState
from platpay.kit import currencies
from platpay.kit.money import rescale


class DeclineReason(StrEnum):
    CARD_PAUSED = "CARD_PAUSED"
    CARD_CLOSED = "CARD_CLOSED"
    CARD_NOT_ACTIVE = "CARD_NOT_ACTIVE"
    CURRENCY_MISMATCH = "CURRENCY_MISMATCH"
    TRANSACTION_SIZE_LIMIT_EXCEEDED = "TRANSACTION_SIZE_LIMIT_EXCEEDED"
    INSUFFICIENT_FUNDS = "INSUFFICIENT_FUNDS"
    NO_ACTIVE_FUNDING_SOURCE = "NO_ACTIVE_FUNDING_SOURCE"


class Purpose(StrEnum):
    PURCHASE = "PURCHASE"  # spends from a source
    INQUIRY = "INQUIRY"  # a balance inquiry: moves nothing
    CREDIT = "CREDIT"  # puts money on a source


class MessageKind(StrEnum):
    """The network messages that open a card transaction (its `kind`), and what each asks."""

    AUTHORIZATION = "AUTHORIZATION"  # dual message: a hold, cleared later
    FINANCIAL_AUTHORIZATION = "FINANCIAL_AUTHORIZATION"  # single message: authorized and settled at once
    BALANCE_INQUIRY = "BALANCE_INQUIRY"
    CREDIT_AUTHORIZATION = "CREDIT_AUTHORIZATION"  # a pending credit, posted when cleared
    CREDIT_AUTHORIZATION_ADVICE = "CREDIT_AUTHORIZATION_ADVICE"  # the same, already approved by the network
    FINANCIAL_CREDIT_AUTHORIZATION = "FINANCIAL_CREDIT_AUTHORIZATION"  # a credit posted at once

    @property
    def purpose(self) -> Purpose:
        return _PURPOSES[self]

    @property
    def advice(self) -> bool:
        return self is MessageKind.CREDIT_AUTHORIZATION_ADVICE

    @property
    def single_message(self) -> bool:
        """Authorized and settled in one message (no clearing follows)."""
        return self in (MessageKind.FINANCIAL_AUTHORIZATION, MessageKind.FINANCIAL_CREDIT_AUTHORIZATION)


_PURPOSES = {
    MessageKind.AUTHORIZATION: Purpose.PURCHASE,
    MessageKind.FINANCIAL_AUTHORIZATION: Purpose.PURCHASE,
    MessageKind.BALANCE_INQUIRY: Purpose.INQUIRY,
    MessageKind.CREDIT_AUTHORIZATION: Purpose.CREDIT,
    MessageKind.CREDIT_AUTHORIZATION_ADVICE: Purpose.CREDIT,
    MessageKind.FINANCIAL_CREDIT_AUTHORIZATION: Purpose.CREDIT,
}


@dataclass(frozen=True, slots=True)
class CardSnapshot:
    id: str
    state: str  # CardState value
    currency: str
    max_spend_per_transaction: int | None = None  # minor units of `currency`; None: no limit


@dataclass(frozen=True, slots=True)
class SourceSnapshot:
    account_id: str
    currency: str
    status: str  # the internal account's status: only ACTIVE accounts pay
    available: int  # minor units


@dataclass(frozen=True, slots=True)
class AuthorizationRequest:
    amount: int  # minor units of `currency` (as the network sent it), > 0 (0 for an INQUIRY)
    currency: str
    network_decline: DeclineReason | None = None  # the network declined before asking us
    purpose: Purpose = Purpose.PURCHASE
    advice: bool = False  # the network approved it already: recorded unless there is nowhere to put it


@dataclass(frozen=True, slots=True)
class Decision:
    approved: bool
    account_id: str | None = None  # the source to hold on, when approved
    decline_reason: DeclineReason | None = None

    @classmethod
    def approve(cls, account_id: str) -> Decision:
        return cls(True, account_id=account_id)

    @classmethod
    def decline(cls, reason: DeclineReason) -> Decision:
        return cls(False, decline_reason=reason)


_CARD_DECLINES: dict[str, DeclineReason] = {  # by state value (the snapshot holds the string)
    CardState.FROZEN: DeclineReason.CARD_PAUSED,
    CardState.CLOSED: DeclineReason.CARD_CLOSED,
    CardState.PENDING_ISSUE: DeclineReason.CARD_NOT_ACTIVE,
}


def in_card_currency(card_currency: str, amount: int, currency: str) -> int | None:
    """`amount` minor units of `currency`, as the network sends them (an authorization, and its clearings and
    returns), in minor units of the card's currency: the card's own currency as is; the fiat currency the
    card's stablecoin tracks (USD on a USDB card, kit/currencies) one for one, scaled to the card currency's
    decimals (USD 2 → USDB 6: ×10^4) and rounded up where they are fewer (a hold never covers less than the
    network asked for); None for any other currency (CURRENCY_MISMATCH)."""
    if currency == card_currency:
        return amount
    if currencies.tracked_fiat(card_currency) != currency:
        return None
    return rescale(
        amount,
        from_decimals=currencies.require(currency).decimals,
        to_decimals=currencies.require(card_currency).decimals,
    )


def decide(
    card: CardSnapshot, sources: tuple[SourceSnapshot, ...], request: AuthorizationRequest
) -> Decision:
    if request.network_decline is not None and not request.advice:
        return Decision.decline(request.network_decline)
    card_decline = _CARD_DECLINES.get(card.state)
    if card_decline is not None and not request.advice:
        return Decision.decline(card_decline)
    amount = in_card_currency(card.currency, request.amount, request.currency)
    if amount is None:
        return Decision.decline(DeclineReason.CURRENCY_MISMATCH)
    if request.purpose == Purpose.PURCHASE:
        if card.max_spend_per_transaction is not None and amount > card.max_spend_per_transaction:
            return Decision.decline(DeclineReason.TRANSACTION_SIZE_LIMIT_EXCEEDED)
        for source in sources:
            if (
                source.status == InternalAccountStatus.ACTIVE
                and source.currency == card.currency
                and source.available >= amount > 0
            ):
                return Decision.approve(source.account_id)
        return Decision.decline(DeclineReason.INSUFFICIENT_FUNDS)
    for source in sources:
        if source.status == InternalAccountStatus.ACTIVE and source.currency == card.currency:
            return Decision.approve(source.account_id)
    if request.purpose == Purpose.INQUIRY:
        return Decision.decline(DeclineReason.INSUFFICIENT_FUNDS)
    return Decision.decline(DeclineReason.NO_ACTIVE_FUNDING_SOURCE)


def without(sources: tuple[SourceSnapshot, ...], account_id: str) -> tuple[SourceSnapshot, ...]:
    """The snapshot after a hold on `account_id` was refused: that source has nothing available."""
    return tuple(replace(s, available=0) if s.account_id == account_id else s for s in sources)
