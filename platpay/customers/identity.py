"""An individual's identification number (`identifier`: an SSN or ITIN), write-only: sealed under the master
key (kit/crypto/sealing.py, AES-256-GCM) with the customer's id bound as associated data, so that a sealed
value copied onto another customer does not open. No answer, webhook, log line or error message carries
it (where a request's fields are kept, `fingerprint` stands for it); a KYC provider adapter that must send
it opens it with `open_identifier`."""

from __future__ import annotations

import hashlib
import hmac

from platpay.kit.crypto.sealing import Sealer, load_master_key, master_key_source, process_sealer

_FINGERPRINT_LABEL = b"platpay customers: identifier fingerprint key v1"


def _sealer() -> Sealer:
    return process_sealer()


def _purpose(customer_id: str) -> str:
    return f"customer identifier {customer_id}"


def seal_identifier(customer_id: str, identifier: str) -> str:
    return _sealer().seal(identifier.encode(), purpose=_purpose(customer_id))


def open_identifier(customer_id: str, sealed: str) -> str:
    return _sealer().open(sealed, purpose=_purpose(customer_id)).decode()


def fingerprint(customer_id: str, identifier: str) -> str:
    """A keyed digest standing for the identifier where a request's fields are kept or shown (the signed
    retry of an email change binds the PATCH's fields into its payloadToSign): the same identifier gives
    the same value, and nobody without the master key can test guesses against it (a plain hash of a
    nine-digit number could be reversed by trying them all)."""
    key = hmac.new(load_master_key(*master_key_source()), _FINGERPRINT_LABEL, hashlib.sha256)
    return (
        "hmac-sha256:"
        + hmac.new(key.digest(), f"{customer_id}\x00{identifier}".encode(), hashlib.sha256).hexdigest()
    )
