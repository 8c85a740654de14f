"""What the ledger's reads return to callers (the console's views): frozen dataclasses of plain values.
Amounts are ints of minor units of their currency."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime


@dataclass(frozen=True, slots=True)
class EntryPosting:
    """One posting of a journal entry, with the ledger account it hit. `amount` is signed (+ money into the
    account's bucket): a debit of the account when negative, a credit when positive. For an INTERNAL account
    `account_id` is the internal account's id (its owner is the accounts domain's to say:
    `accounts.service.owners_of`)."""

    id: str
    account_id: str
    account_kind: str  # LedgerAccountKind
    account_code: str  # e.g. internal:<id>, clearing:ACH:USD
    currency: str
    bucket: str  # Bucket
    amount: int

    @property
    def side(self) -> str:
        return "CREDIT" if self.amount > 0 else "DEBIT"


@dataclass(frozen=True, slots=True)
class JournalEntry:
    id: str
    kind: str
    reference: str | None
    reverses_id: str | None
    created_at: datetime
    postings: tuple[EntryPosting, ...]


@dataclass(frozen=True, slots=True)
class AccountWithBalance:
    id: str
    kind: str  # LedgerAccountKind
    code: str
    currency: str
    available: int
    held: int  # reserved: payments in flight, card holds
    open_holds: int  # how many OPEN holds (ledger_holds) reserve part of `held`
    created_at: datetime

    @property
    def total(self) -> int:
        return self.available + self.held


@dataclass(frozen=True, slots=True)
class CurrencyTotals:
    """A currency's money on INTERNAL accounts: the platform's own and its customers' (available + held)."""

    currency: str
    platform_available: int
    platform_held: int
    customers_available: int
    customers_held: int


@dataclass(frozen=True, slots=True)
class MoneyFlow:
    """Money that came in from, and went out to, the world outside the ledger in one period and currency."""

    period: date  # the first day of the bucket (UTC)
    currency: str
    money_in: int
    money_out: int
