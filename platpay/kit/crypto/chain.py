"""Hash chains under a key derived from the master key: what the agents' audit trail and the console's action
trail are made of.

A record's hash is HMAC-SHA-256, under the chain's key, of the previous record's hash followed by the record's
canonical content (sorted, compact JSON, UTF-8); the first record's previous hash is GENESIS. A chain's key is
HKDF-SHA-256 of the master key (no salt, 32 bytes) with the chain's own `info`, so a key is good for one
chain kind and nothing else, and a record can be rewritten (and the chain re-linked after it) only by someone
holding the master key."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from platpay.kit.crypto.sealing import load_master_key, master_key_source

GENESIS = "0" * 64


@cache
def _derived_key(configured_master_key: str | None, var_dir: Path, info: bytes) -> bytes:
    master = load_master_key(configured_master_key, var_dir)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(master)


def chain_key(info: bytes) -> bytes:
    """The key of the chains labelled `info`: HKDF-SHA-256 of the process's master key."""
    return _derived_key(*master_key_source(), info)


def timestamp(value: datetime) -> str:
    """A time as chained content holds it (UTC, microseconds, `Z`)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def message(previous_hash: str, content: Mapping[str, Any]) -> bytes:
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return (previous_hash + canonical).encode()


def hash_of(previous_hash: str, content: Mapping[str, Any], *, key: bytes | None) -> str:
    """The record's hash: keyed (HMAC-SHA-256) under `key`, or, with None, the plain SHA-256 (the agents'
    records written before their chains were keyed)."""
    raw = message(previous_hash, content)
    if key is None:
        return hashlib.sha256(raw).hexdigest()
    return hmac.new(key, raw, hashlib.sha256).hexdigest()
