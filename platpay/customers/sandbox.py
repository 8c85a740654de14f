"""The sandbox's KYC magic value read from a customer's own fields (docs/sandbox.md): on a sandbox tenant
an individual's `fullName` may end in three digits (`Jane Doe 001`), which platpay's name rules otherwise
refuse, and they decide the customer's kycStatus at creation, as the reference's sandbox does:

| suffix | kycStatus at creation | on POST /verifications (onboarding/sandbox.py) |
|---|---|---|
| `001` | PENDING | with everything on file: reviewed, waiting for a person (PENDING_MANUAL_REVIEW) |
| `002` | REJECTED | a decided customer's verification says REJECTED |
| `003` | UNVERIFIED | with everything on file: RESOLVE_ERRORS, a POOR_QUALITY_DOCUMENT error |
| other digits | APPROVED | a decided customer's verification says APPROVED |

A name without the suffix keeps platpay's earlier sandbox behaviour (the platform's starting status; the
review decided by the user part of the email, onboarding/sandbox.py)."""

from __future__ import annotations

import re

from platpay.customers.state import KycStatus

_SUFFIX = re.compile(r"^(?P<name>.*?) ?(?P<digits>\d{3})$", re.DOTALL)
AT_CREATION = {"001": KycStatus.PENDING, "002": KycStatus.REJECTED, "003": KycStatus.UNVERIFIED}


def split_name(full_name: str) -> tuple[str, str | None]:
    """The name without its sandbox suffix, and the suffix's three digits (None when it has none)."""
    found = _SUFFIX.match(full_name)
    if found is None:
        return full_name, None
    return found["name"], found["digits"]


def name_suffix(full_name: str | None) -> str | None:
    return split_name(full_name)[1] if full_name else None


def outcome_at_creation(full_name: str | None) -> KycStatus | None:
    """The kycStatus a new sandbox individual named `full_name` starts in; None: no magic suffix."""
    digits = name_suffix(full_name)
    if digits is None:
        return None
    return AT_CREATION.get(digits, KycStatus.APPROVED)
