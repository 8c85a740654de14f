"""What wallets need from outside (kit/providers.py): custody of each wallet's secret.

`Custody` creates a wallet's secret (a BIP-39 mnemonic) and hands back only a sealed form to store, and
opens that form again for an export. The sandbox implementation (sandbox.py, the default) seals by envelope
encryption under PLATPAY_MASTER_KEY in this process; a KMS or HSM adapter (PLATPAY_WALLET_CUSTODY =
`package.module:factory`) keeps the key, or the secret itself, outside the process behind the same two calls. Both are called inside the caller's transaction (provisioning happens with the
account it provisions): an adapter should keep them fast (a cached, KMS-wrapped key encryption key), not a
network round trip per call.
"""

from __future__ import annotations

from typing import Protocol

from platpay.kit.providers import Slot


class Custody(Protocol):
    name: str

    async def create_secret(self, *, account_id: str) -> str:
        """A new wallet secret for `account_id`, sealed: what the wallets table stores. The plaintext
        never leaves the call."""
        ...

    async def reveal_secret(self, sealed: str, *, account_id: str) -> str:
        """The mnemonic sealed in `sealed` for `account_id` (for an export, sealed at once to the client)."""
        ...


CUSTODY: Slot[Custody] = Slot("wallet_custody")
