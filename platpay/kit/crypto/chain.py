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

import orjson
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
    """A time as chained content holds it (UTC, microseconds, `Z`): `%Y-%m-%dT%H:%M:%S.%fZ`."""
    utc = value.astimezone(UTC)
    if utc.year < 1000:  # (strftime's %Y does not pad a year below 1000 to four digits; isoformat does)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return utc.isoformat(timespec="microseconds")[:-6] + "Z"  # (its "+00:00" replaced)


def plain(value: Any) -> bool:
    """Whether `value` is made of dicts, lists, strings, integers, booleans and None only (exactly those
    types: no subclass, no float)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is not str and kind is not int and kind is not bool and item is not None:
            return False
    return True


def canonical(content: Mapping[str, Any]) -> bytes:
    """Sorted, compact JSON, UTF-8: `json.dumps(content, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`. For a plain value (`plain`) orjson writes exactly those bytes (the same escapes, keys
    in code point order) about ten times faster; a float (whose exponent orjson spells differently: `1e-5`
    for `1e-05`), a key that is no string, an integer beyond 64 bits or any other type goes to the standard
    library, which accepts or refuses it as it always did."""
    if plain(content):
        try:
            return orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # (a key that is no string, an integer beyond 64 bits: orjson.JSONEncodeError)
            pass
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def message(previous_hash: str, content: Mapping[str, Any]) -> bytes:
    return previous_hash.encode() + canonical(content)


def hash_of(previous_hash: str, content: Mapping[str, Any], *, key: bytes | None) -> str:
    """The record's hash: keyed (HMAC-SHA-256) under `key`, or, with None, the plain SHA-256 (the agents'
    records written before their chains were keyed)."""
    raw = message(previous_hash, content)
    if key is None:
        return hashlib.sha256(raw).hexdigest()
    return hmac.new(key, raw, hashlib.sha256).hexdigest()
