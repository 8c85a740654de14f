"""Contact verification's rules as data and pure functions: which channels a customer must confirm (the
`contactVerification` of the provider requirements of its currencies, tenants/data/provider_requirements.json:
the sandbox providers of EUR require EMAIL and PHONE, of GBP EMAIL), the `contactVerification` object a
customer shows, and the one-time codes (drawn from the OS's CSPRNG, stored as an HMAC-SHA256 under a key
derived from the master key, so that a database dump reveals no code: a plain hash of six digits would)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from functools import cache
from pathlib import Path
from typing import Any

from platpay.customers.contact.schemas import ContactVerification
from platpay.customers.state import ContactChannelStatus
from platpay.kit.crypto.sealing import load_master_key, master_key_source
from platpay.tenants import service as tenants_service

EMAIL, PHONE = "email", "phone"
CHANNELS = {"EMAIL": EMAIL, "PHONE": PHONE}  # the requirement's name -> the API's key
SANDBOX_CODE = "123456"  # always accepted for sandbox tenants (INTERFACE-FACTS §7)
CODE_DIGITS = 6
CODE_TTL_SECONDS = 600
MAX_FAILED_ATTEMPTS = 5  # wrong codes tried against one code before it is burnt (send a new one)
# Per customer and channel, counted in the database (kit/rate_limits.py): 429 RATE_LIMITED past them.
SEND_LIMIT, CONFIRM_LIMIT, LIMIT_WINDOW_SECONDS = 5, 10, 900
_DIGEST_LABEL = b"platpay customers: contact verification code digest key v1"


def required_channels(currencies: list[str] | None) -> list[str]:
    """The channels ("email", "phone") the providers of these currencies require confirmed, in that order."""
    names = {
        name
        for code in currencies or []
        for name in tenants_service.provider_requirements(code).get("contactVerification", [])
    }
    return [channel for name, channel in CHANNELS.items() if name in names]


def verified_channels(
    verified_contacts: dict[str, Any] | None, *, email: str | None, phone_number: str | None = None
) -> set[str]:
    """The channels confirmed and still current: an email confirmed and changed since is not, nor a phone
    number other than the customer's `phoneNumber` (when it has one; else the number the code went to)."""
    confirmed = verified_contacts or {}
    channels = set()
    if EMAIL in confirmed and email is not None and str(confirmed[EMAIL]).lower() == email.lower():
        channels.add(EMAIL)
    if PHONE in confirmed and (phone_number is None or confirmed[PHONE] == phone_number):
        channels.add(PHONE)
    return channels


def view(
    *,
    currencies: list[str] | None,
    verified_contacts: dict[str, Any] | None,
    email: str | None,
    phone_number: str | None = None,
) -> ContactVerification | None:
    """The customer's `contactVerification`: None when no channel is required."""
    required = required_channels(currencies)
    if not required:
        return None
    done = verified_channels(verified_contacts, email=email, phone_number=phone_number)
    return ContactVerification(
        **{
            channel: ContactChannelStatus.VERIFIED if channel in done else ContactChannelStatus.PENDING
            for channel in required
        }
    )


def pending_channels(
    *,
    currencies: list[str] | None,
    verified_contacts: dict[str, Any] | None,
    email: str | None,
    phone_number: str | None = None,
) -> list[str]:
    """The required channels not yet VERIFIED (a KYC link waits for none: SPEC §4.4)."""
    done = verified_channels(verified_contacts, email=email, phone_number=phone_number)
    return [channel for channel in required_channels(currencies) if channel not in done]


def new_code() -> str:
    return f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"


@cache
def _digest_key(configured: str | None, var_dir: Path) -> bytes:
    return hmac.new(load_master_key(configured, var_dir), _DIGEST_LABEL, hashlib.sha256).digest()


def code_digest(code_id: str, code: str) -> str:
    key = _digest_key(*master_key_source())
    return hmac.new(key, f"{code_id}\x00{code}".encode(), hashlib.sha256).hexdigest()


def code_matches(code_id: str, code: str, digest: str) -> bool:
    return hmac.compare_digest(code_digest(code_id, code), digest)
