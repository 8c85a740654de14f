"""Deterministic sandbox funding instructions for internal accounts.

Fiat deposits go to one omnibus (FBO) bank account per currency, told apart by a per-account reference
the sender puts in the memo; crypto deposits go to an address of the account's own. Everything is derived
from the account id, so the same account always shows the same details, and every identifier passes the
same validators external accounts do (valid ABA routing number, IBAN and CLABE check digits, base58 and
bech32m addresses).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any, cast

from platpay.accounts.models import InternalAccountRow
from platpay.accounts.types import PaymentInstruction
from platpay.accounts.validators import checksums, encodings, wallets

SANDBOX_BANK = "Platpay Sandbox Bank"
# Who holds the omnibus (FBO) accounts deposits go to: the name a SWIFT sender puts as beneficiary
# (PaymentSwiftAccountInfo.accountHolderName, required by the reference since 2026-08).
SANDBOX_ACCOUNT_HOLDER = "Platpay Sandbox FBO"
SANDBOX_ROUTING = "021000021"  # a real-format ABA number (check digit valid)
_REFERENCE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O/1/I: references get typed by hand


def _digest(account_id: str, purpose: str) -> bytes:
    return hashlib.sha256(f"{purpose}:{account_id}".encode()).digest()


def _digits(account_id: str, purpose: str, count: int) -> str:
    number = int.from_bytes(_digest(account_id, purpose), "big")
    return str(number % 10**count).zfill(count)


def deposit_reference(account_id: str) -> str:
    """The memo code identifying deposits for this account: 'PP' + 10 characters."""
    number = int.from_bytes(_digest(account_id, "reference"), "big")
    chars = []
    for _ in range(10):
        number, index = divmod(number, len(_REFERENCE_ALPHABET))
        chars.append(_REFERENCE_ALPHABET[index])
    return "PP" + "".join(chars)


def _iban_de(account_id: str) -> str:
    bban = "10010010" + _digits(account_id, "iban", 10)  # a Berlin bank code + account number
    return checksums.make_iban("DE", bban)


def _clabe(account_id: str) -> str:
    return checksums.make_clabe("646180" + _digits(account_id, "clabe", 11))  # 646 = STP, 180 = CDMX


def _bank_info(account_id: str, code: str, reference: str) -> dict[str, Any]:
    if code == "USD":
        return {
            "accountType": "USD_ACCOUNT",
            "accountNumber": _digits(account_id, "usd", 12),
            "routingNumber": SANDBOX_ROUTING,
            "bankName": SANDBOX_BANK,
            "paymentRails": ["ACH", "WIRE", "RTP", "FEDNOW"],
            "reference": reference,
        }
    if code == "EUR":
        return {
            "accountType": "EUR_ACCOUNT",
            "iban": _iban_de(account_id),
            "swiftCode": "PLPYDEFFXXX",
            "bankName": SANDBOX_BANK,
            "paymentRails": ["SEPA", "SEPA_INSTANT"],
            "reference": reference,
        }
    if code == "MXN":
        return {
            "accountType": "MXN_ACCOUNT",
            "clabeNumber": _clabe(account_id),
            "bankName": SANDBOX_BANK,
            "paymentRails": ["SPEI"],
            "reference": reference,
        }
    if code == "GBP":
        return {
            "accountType": "GBP_ACCOUNT",
            "sortCode": "040004",
            "accountNumber": _digits(account_id, "gbp", 8),
            "bankName": SANDBOX_BANK,
            "paymentRails": ["FASTER_PAYMENTS"],
            "reference": reference,
        }
    if code == "BRL":
        return {
            "accountType": "BRL_ACCOUNT",
            "qrCode": _pix_payload(account_id, reference),
            "paymentRails": ["PIX"],
        }
    if code == "INR":
        return {
            "accountType": "INR_ACCOUNT",
            "vpa": f"platpay.{reference.lower()}@sandbox",
            "paymentRails": ["UPI"],
        }
    return {
        "accountType": "SWIFT_ACCOUNT",
        "swiftCode": "PLPYUS33XXX",
        "bankName": SANDBOX_BANK,
        "country": "US",
        "accountNumber": _digits(account_id, f"swift-{code}", 12),
        "accountHolderName": SANDBOX_ACCOUNT_HOLDER,
        "paymentRails": ["SWIFT"],
        # optional since 2026-08 (the account number identifies the deposit), kept for June's clients
        "reference": reference,
    }


def _pix_payload(account_id: str, reference: str) -> str:
    """A static PIX 'copia e cola' (EMV) payload with its CRC16 — the shape Brazilian banks scan."""
    key = f"{_digits(account_id, 'pix', 8)}-sandbox@platpay.test"
    merchant = f"0014br.gov.bcb.pix01{len(key):02d}{key}"
    fields = [
        "000201",
        f"26{len(merchant):02d}{merchant}",
        "52040000",
        "5303986",
        "5802BR",
        "5915PLATPAY SANDBOX"[:19],
        "6009SAO PAULO",
        f"62{len(reference) + 4:02d}05{len(reference):02d}{reference}",
        "6304",
    ]
    body = "".join(fields)
    return body + f"{checksums.crc16_ccitt(body.encode()):04X}"


_WALLETS = {
    "USDC": ("SOLANA_WALLET", "USDC"),
    "USDT": ("TRON_WALLET", "USDT"),
    "SOL": ("SOLANA_WALLET", None),
    "TRX": ("TRON_WALLET", None),
    "ETH": ("ETHEREUM_WALLET", None),
    "POL": ("POLYGON_WALLET", None),
    "BTC": ("SPARK_WALLET", "BTC"),
    "USDB": ("SPARK_WALLET", "USDB"),
}


def _wallet_info(account_id: str, currency: str) -> dict[str, Any]:
    account_type, asset = _WALLETS[currency]
    seed = _digest(account_id, "wallet")
    if account_type == "SOLANA_WALLET":
        address = encodings.base58_encode(seed)
    elif account_type == "TRON_WALLET":
        address = encodings.base58check_encode(b"\x41" + seed[:20])
    elif account_type == "SPARK_WALLET":
        address = wallets.make_spark_address(wallets.compressed_key_from_seed(seed))
    else:
        address = wallets.eip55_checksum("0x" + seed[:20].hex())
    info: dict[str, Any] = {"accountType": account_type, "address": address}
    if asset:
        info["assetType"] = asset
    return info


def funding_instructions(row: InternalAccountRow) -> list[PaymentInstruction]:
    return derived_instructions(row.id, row.currency)


def derived_instructions(source_id: str, currency: str) -> list[PaymentInstruction]:
    """The deposit details derived from an id (an account's, a quote's) and a currency alone: derived once
    per id and process (a transfer renders its account in a balance event; the hashes and check digits cost
    ~15 µs), a fresh copy each time (callers adjust the notes)."""
    return [
        cast("PaymentInstruction", {**item, "accountOrWalletInfo": dict(item["accountOrWalletInfo"])})
        for item in _derived(source_id, currency)
    ]


@lru_cache(maxsize=4096)
def _derived(account_id: str, currency: str) -> tuple[PaymentInstruction, ...]:
    if currency in _WALLETS:
        return (
            {
                "accountOrWalletInfo": _wallet_info(account_id, currency),
                "instructionsNotes": f"Send {currency} to this address.",
                "isPlatformAccount": False,
            },
        )
    reference = deposit_reference(account_id)
    notes = "Put the reference in the transfer memo so the deposit is credited to this account."
    if currency == "INR":
        notes = "Pay this UPI address; it identifies this account."
    return (
        {
            "accountOrWalletInfo": _bank_info(account_id, currency, reference),
            "instructionsNotes": notes,
            "isPlatformAccount": True,
        },
    )
