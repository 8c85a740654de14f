"""Collecting every problem in a payload, so a client fixes them all in one round trip."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from platpay.accounts.errors import InvalidBankAccount
from platpay.errors import InvalidInput

INVALID_BANK_ACCOUNT = InvalidBankAccount.code
_SUMMARY_LIMIT = 5
_MAX_ENTRIES = 100


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages such as "must be a string, got number"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


class FieldProblems:
    """Problems as {"field", "message"} entries, the shape framework validation errors use.

    A problem flagged `account_identifier` is a format or checksum failure of the account identifier
    itself (IBAN, routing number, wallet address...); any such problem turns the error code into
    INVALID_BANK_ACCOUNT, whatever else is wrong alongside it.
    """

    def __init__(self) -> None:
        self.entries: list[dict[str, str]] = []
        self.account_identifier_failed = False

    def __bool__(self) -> bool:
        return bool(self.entries)

    def add(self, field: str, message: str, *, account_identifier: bool = False) -> None:
        self.account_identifier_failed |= account_identifier
        if len(self.entries) < _MAX_ENTRIES:  # a payload of a thousand unknown fields gets a bounded reply
            self.entries.append({"field": field, "message": message})

    def names(self, field: str) -> bool:
        """Whether a problem with `field` is already recorded."""
        return any(entry["field"] == field for entry in self.entries)

    def reject_unknown(
        self, raw: Mapping[str, object], allowed: Iterable[str], *, field: str, owner: str
    ) -> None:
        allowed_names = set(allowed)
        for name in raw:
            if name not in allowed_names:
                self.add(
                    f"{field}.{name}",
                    f"unknown field for {owner}; allowed: {', '.join(sorted(allowed_names))}",
                )

    def raise_if_any(self) -> None:
        if not self.entries:
            return
        shown = "; ".join(f"{entry['field']}: {entry['message']}" for entry in self.entries[:_SUMMARY_LIMIT])
        hidden = len(self.entries) - _SUMMARY_LIMIT
        summary = shown + (f" (and {hidden} more)" if hidden > 0 else "")
        error = InvalidBankAccount if self.account_identifier_failed else InvalidInput
        raise error(f"invalid account details: {summary}", details={"fields": self.entries})


def read_text(
    raw: Mapping[str, object], name: str, *, field: str, required: bool, problems: FieldProblems
) -> str | None:
    """The trimmed string at raw[name]. Absent, null and blank are the same "not given" (a client sending
    "" for an optional field means nothing by it); a non-string is a problem."""
    value = raw.get(name)
    if isinstance(value, str):
        value = value.strip()
        if value:
            return value
        if required:
            problems.add(field, "must not be empty")
        return None
    if value is None:
        if required:
            problems.add(field, "is required")
        return None
    problems.add(field, f"must be a string, got {json_type(value)}")
    return None
