"""The signed-retry headers and 202 body (SPEC §4.12, INTERFACE-FACTS §6), for every domain's endpoints.

The mechanism itself (pending challenges, allowed signers, verification, single use) is the wallets domain's
(wallets/signed/retry.py); these pieces live in kit so that a domain below wallets (customers' email change)
can take the headers and answer the challenge without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Header
from pydantic import Field

from platpay.kit.api_model import ApiModel

SIGNATURE_HEADER = "Svc-Wallet-Signature"
REQUEST_ID_HEADER = "Request-Id"
_STAMP_EXAMPLE = (
    "eyJwdWJsaWNLZXkiOiIwMmExYjIuLi4iLCJzY2hlbWUiOiJTSUdOQVRVUkVfU0NIRU1FX1RLX0FQSV9QMjU2Iiwic2lnbmF0dXJl"
    "IjoiMzA0NTAyMjEwMC4uLiJ9"
)


@dataclass(frozen=True, slots=True)
class WalletSignature:
    """The two headers of a signed retry as the request carried them (None when absent)."""

    signature: str | None = None
    request_id: str | None = None

    @property
    def absent(self) -> bool:
        """Neither header: the first call of a signed operation."""
        return self.signature is None and self.request_id is None


async def wallet_signature_headers(
    signature: Annotated[
        str | None,
        Header(
            alias=SIGNATURE_HEADER,
            description="Full API-key stamp (base64url JSON {publicKey, scheme, signature}) built over the "
            "prior `payloadToSign` with the session API keypair of a verified credential on the account. "
            "Required on the signed retry; ignored on the initial call.",
            examples=[_STAMP_EXAMPLE],
        ),
    ] = None,
    request_id: Annotated[
        str | None,
        Header(
            alias=REQUEST_ID_HEADER,
            description="The `requestId` of the prior 202 response, echoed on the signed retry. Required on "
            f"the signed retry; must be paired with `{SIGNATURE_HEADER}`.",
            examples=["Request:019542f5-b3e7-1d02-0000-000000000010"],
        ),
    ] = None,
) -> WalletSignature:
    """FastAPI dependency: the signed-retry headers, documented on the operation as the reference has them."""
    return WalletSignature(signature, request_id)


class SignedRequestChallenge(ApiModel):
    """202 of a signed operation's first call: stamp `payloadToSign` and retry with the same body."""

    payload_to_sign: str = Field(description="the exact text to stamp (no re-serialization)")
    request_id: str = Field(examples=["Request:019542f5-b3e7-1d02-0000-000000000010"])
    expires_at: datetime = Field(description="the signed retry must arrive before this instant")
