"""Secrets at rest (private keys, later wallet mnemonics) sealed with AES-256-GCM under the master key.

Sealed form: "v1." + base64url(nonce(12) || ciphertext+tag). The purpose string is bound as associated
data so a value sealed for one purpose can never be opened as another.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from platpay.config import decode_master_key
from platpay.kit.entropy import random_bytes

_PREFIX = "v1."


def _b64d(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def _b64e(value: bytes) -> str:
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode()


class Sealer:
    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("master key must be 32 bytes")
        self._aead = AESGCM(key)

    def seal(self, plaintext: bytes, *, purpose: str) -> str:
        nonce = random_bytes(12)  # unique per seal (kit/entropy.py: never handed out twice)
        return _PREFIX + _b64e(nonce + self._aead.encrypt(nonce, plaintext, purpose.encode()))

    def open(self, sealed: str, *, purpose: str) -> bytes:
        if not sealed.startswith(_PREFIX):
            raise ValueError("unknown sealed-value version")
        raw = _b64d(sealed[len(_PREFIX) :])
        return self._aead.decrypt(raw[:12], raw[12:], purpose.encode())


def load_master_key(configured: str | None, var_dir: Path) -> bytes:
    """The configured key, or one generated once under var/ (single-machine deployments only)."""
    if configured:
        try:
            return decode_master_key(configured)
        except ValueError as error:
            raise ValueError(f"PLATPAY_MASTER_KEY {error}") from None
    path = var_dir / "master.key"
    if path.exists():
        try:
            return decode_master_key(path.read_text())
        except ValueError as error:
            raise ValueError(f"the master key in {path} {error}") from None
    var_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, _b64e(key).encode())
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return key


_sealers: dict[tuple[str | None, str], Sealer] = {}
# Where the process's master key comes from (the configured key, else var/master.key): set once at startup
# (domains.start, the CLI's settings), read by what seals or derives keys outside a request's parameters.
_master_key_source: tuple[str | None, Path] | None = None


def use_master_key(configured: str | None, var_dir: Path) -> None:
    """The process's master key: `configured`, else the one kept under `var_dir` (loaded when first used)."""
    global _master_key_source
    _master_key_source = (configured, var_dir)


def master_key_source() -> tuple[str | None, Path]:
    """What `use_master_key` was given at startup."""
    if _master_key_source is None:
        raise RuntimeError("the master key is used before startup chose it (sealing.use_master_key)")
    return _master_key_source


def process_sealer() -> Sealer:
    """The sealer of the process's master key (see `use_master_key`)."""
    return get_sealer(*master_key_source())


def get_sealer(configured: str | None, var_dir: Path) -> Sealer:
    """The process-wide sealer for these settings (keys are loaded once)."""
    quick_key = (configured, str(var_dir))  # looked up per request: no path resolution (a syscall) then
    sealer = _sealers.get(quick_key)
    if sealer is None:
        cache_key = (configured, str(var_dir.resolve()))
        sealer = _sealers.get(cache_key)
        if sealer is None:
            sealer = _sealers[cache_key] = Sealer(load_master_key(configured, var_dir))
        _sealers[quick_key] = sealer
    return sealer
