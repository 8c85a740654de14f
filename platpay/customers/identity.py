"""An individual's identification number (`identifier`: an SSN or ITIN), write-only: sealed under the master
key (kit/crypto/sealing.py, AES-256-GCM) with the customer's id bound as associated data, so that a sealed
value copied onto another customer does not open. No answer, webhook, log line or error message carries
it; a KYC provider adapter that must send it opens it with `open_identifier`."""

from __future__ import annotations

from platpay.config import get_settings
from platpay.kit.crypto.sealing import Sealer, get_sealer


def _sealer() -> Sealer:
    settings = get_settings()
    return get_sealer(settings.master_key, settings.var_dir)


def _purpose(customer_id: str) -> str:
    return f"customer identifier {customer_id}"


def seal_identifier(customer_id: str, identifier: str) -> str:
    return _sealer().seal(identifier.encode(), purpose=_purpose(customer_id))


def open_identifier(customer_id: str, sealed: str) -> str:
    return _sealer().open(sealed, purpose=_purpose(customer_id)).decode()
