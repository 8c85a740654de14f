"""The FastAPI face of the signed-retry mechanism (signed/retry.py): the `SignedRetry` dependency that makes
a signed operation's endpoint two lines."""

from __future__ import annotations

from fastapi import Depends, Request, Response

from platpay.kit.wallet_signature import WalletSignature, wallet_signature_headers
from platpay.wallets.signed.retry import Prepare, Then, execute


class SignedRetry:
    """FastAPI dependency for a signed operation (see the module): `signed: SignedRetry = Signed` takes the
    request and its two headers (documented on the operation); `await signed.run(prepare=..., then=...)`.
    The tenant is the one authentication recorded, so the endpoint's principal dependency must run (it does
    whenever the endpoint declares one)."""

    __slots__ = ("request", "signature")

    def __init__(self, request: Request, signature: WalletSignature) -> None:
        self.request = request
        self.signature = signature

    @property
    def first_call(self) -> bool:
        return self.signature.absent

    async def run(self, *, prepare: Prepare, then: Then, status: int = 200) -> Response:
        return await execute(
            self.request.app.state.db,
            tenant=self.request.state.principal.tenant,
            signature=self.signature,
            prepare=prepare,
            then=then,
            settings=self.request.app.state.settings,
            status=status,
        )


async def signed_retry(
    request: Request, signature: WalletSignature = Depends(wallet_signature_headers)
) -> SignedRetry:
    """The `SignedRetry` of a request. A coroutine: FastAPI runs a class dependency in a worker thread, a
    thread hop per request (tests/kit/test_dependencies.py)."""
    return SignedRetry(request, signature)


Signed = Depends(signed_retry)
