"""The accounts domain's shapes that services pass around as JSON. TypedDicts: at run time they are the
plain dicts the API models and the JSON columns take."""

from __future__ import annotations

from typing import Any, TypedDict


class PaymentInstruction(TypedDict):
    """How to send money in (one item of an internal account's fundingPaymentInstructions, or of a quote's
    paymentInstructions), in the API's names."""

    # the reference's PaymentAccountInfo for its `accountType`: a bank account (USD_ACCOUNT, ...) with the
    # `reference` the sender puts in the memo, or a wallet address (SOLANA_WALLET, ...)
    accountOrWalletInfo: dict[str, Any]
    instructionsNotes: str
    isPlatformAccount: bool
