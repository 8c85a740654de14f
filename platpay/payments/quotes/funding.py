"""Real-time funding: the payment instructions a REALTIME_FUNDING (or UMA-address) quote returns.

They reuse the internal-account deposit details (accounts/instructions.py) keyed by the quote id instead of
an account id: deterministic, valid identifiers (ABA, IBAN, CLABE check digits, wallet encodings) and a
memo reference tied to this quote; crypto gets a deposit address of the quote's own.
"""

from __future__ import annotations

from platpay.accounts import instructions
from platpay.accounts.types import PaymentInstruction
from platpay.errors import invalid_field
from platpay.kit import currencies

# The network each crypto deposit arrives on in this deployment (accounts/instructions.py's wallets).
DEPOSIT_NETWORKS = {
    "USDC": "SOLANA",
    "USDT": "TRON",
    "SOL": "SOLANA",
    "TRX": "TRON",
    "ETH": "ETHEREUM",
    "POL": "POLYGON",
    "BTC": "SPARK",
    "USDB": "SPARK",
}
STABLECOINS_NEEDING_NETWORK = frozenset({"USDC", "USDT"})


def check_network(currency: str, network: str | None, *, field: str) -> str | None:
    """The deposit network for `currency`, or a 400 naming `field` when it is missing or not offered."""
    offered = DEPOSIT_NETWORKS.get(currency)
    if currencies.require(currency).kind != "CRYPTO":
        if network is not None:
            raise invalid_field(field, f"{currency} is not a crypto currency; omit cryptoNetwork")
        return None
    if network is None and currency in STABLECOINS_NEEDING_NETWORK:
        raise invalid_field(field, f"is required for {currency}; this deployment takes {offered}")
    if network is not None and network != offered:
        raise invalid_field(field, f"{currency} deposits are taken on {offered} here, not {network}")
    return offered


def payment_instructions(*, quote_id: str, currency: str, amount: int) -> list[PaymentInstruction]:
    found = instructions.derived_instructions(quote_id, currency)
    for item in found:
        reference = item["accountOrWalletInfo"].get("reference")
        memo = f" with reference {reference} in the memo" if reference else ""
        item["instructionsNotes"] = (
            f"Send exactly {amount} {currency} (minor units){memo} before the quote expires; "
            "the payment executes when the funds arrive."
        )
    return found


def funding_reference(payment_instructions: list[PaymentInstruction]) -> str | None:
    for item in payment_instructions:
        reference = item["accountOrWalletInfo"].get("reference")
        if reference:
            return reference
    return None
