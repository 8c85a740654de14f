"""The signed-retry mechanism (SPEC §4.12, ARCHITECTURE §7), once, for every signed operation.

First call (no `Svc-Wallet-Signature`, no `Request-Id`): `begin` stores a pending challenge under a new
single-use `Request:<uuid>` — the operation, the resource, the bound fields (canonical JSON), the allowed
signers and the expiry — and the 202 body `{payloadToSign, requestId, expiresAt}` goes back. The retry
(same body, both headers): `complete` finds the challenge (same tenant, operation and resource, not used,
not expired), checks the body against the bound fields, parses the stamp (kit/crypto/stamps.py), checks
its key is an allowed signer *now* (an active session of an allowed credential on an allowed account, or
the one key bound into the challenge), verifies the signature over the stored payloadToSign and consumes
the challenge with a conditional UPDATE, in the transaction that then runs the operation: the operation
runs exactly once, and a refusal rolls the consumption back with everything else. Every failure is a 401
with its code (WALLET_SIGNATURE_MISSING, _MALFORMED, _BODY_MISMATCH, _INVALID, REQUEST_ID_MISSING) and
changes nothing.

Using it from an endpoint (any domain above wallets; two lines), with the dependency of
wallets/signed/endpoints.py:

    async def update_card(id: str, body: CardUpdateRequest, signed: SignedRetry = Signed, principal=Manager):
        return await signed.run(
            prepare=lambda s, first: cards_service.update_intent(s, tenant=principal.tenant, card_id=id, ...),
            then=lambda s, proof: cards_service.update_card(s, tenant=principal.tenant, card_id=id, ...),
        )

`prepare` loads the resource (its 404s and 400s apply to both calls) and returns a `SignedIntent`; `then`
does the operation once the retry is verified and returns the response model (None: 204). The allowed
signers for "a verified credential of account X" are `Signers.sessions_of(X)`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar, cast

from fastapi import Response
from fastapi.responses import JSONResponse

from platpay.config import Settings
from platpay.db.database import Database
from platpay.db.unit_of_work import LeanSession
from platpay.kit import clock
from platpay.kit.api_model import ApiModel
from platpay.kit.crypto import stamps
from platpay.kit.ids import is_id, new_id
from platpay.kit.wallet_signature import SignedRequestChallenge, WalletSignature
from platpay.tenants.context import TenantContext
from platpay.wallets import repository
from platpay.wallets.errors import (
    RequestIdMissing,
    WalletSignatureBodyMismatch,
    WalletSignatureInvalid,
    WalletSignatureMalformed,
    WalletSignatureMissing,
)


@dataclass(frozen=True, slots=True)
class Signers:
    """Who may stamp a retry: an active session on one of `account_ids` whose credential is live and not in
    `excluded_credential_ids`; or, when `public_key` is set, exactly that key (compressed SEC1 hex)."""

    account_ids: tuple[str, ...] = ()
    excluded_credential_ids: tuple[str, ...] = ()
    public_key: str | None = None

    @classmethod
    def sessions_of(cls, *account_ids: str, excluding: Sequence[str] = ()) -> Signers:
        return cls(tuple(account_ids), tuple(excluding))

    @classmethod
    def key(cls, public_key: str) -> Signers:
        return cls(public_key=public_key)

    def stored(self) -> dict[str, Any]:
        return {
            "accountIds": list(self.account_ids),
            "excludedCredentialIds": list(self.excluded_credential_ids),
            "publicKey": self.public_key,
        }

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> Signers:
        return cls(
            tuple(stored.get("accountIds") or ()),
            tuple(stored.get("excludedCredentialIds") or ()),
            stored.get("publicKey"),
        )


@dataclass(frozen=True, slots=True)
class SignedIntent:
    """What one signed operation binds: its name, the resource, the fields the retry must repeat, who may
    sign, and what payloadToSign shows (an activity JSON of `activity_type` with `parameters`, the bound
    fields by default; or `payload` verbatim, e.g. EMAIL_OTP's verificationToken)."""

    operation: str
    resource_id: str
    bound: Mapping[str, Any]
    signers: Signers
    activity_type: str = "ACTIVITY_TYPE_SIGNED_REQUEST"
    parameters: Mapping[str, Any] | None = None
    payload: str | None = None
    response_extra: Mapping[str, Any] = field(default_factory=dict)  # added to the 202 body (auth's `type`)
    # Facts of the first call the retry needs back as they were then (not compared with the retry's):
    # email change's credential set, a passkey login's clientPublicKey.
    context: Mapping[str, Any] = field(default_factory=dict)
    # False: nothing can sign yet (adding the first credential of a wallet none has verified), so the
    # operation runs on the first call, `then` getting no proof.
    signature_required: bool = True


@dataclass(frozen=True, slots=True)
class Signed:
    """A verified, consumed retry (or a verified stamp): the key that signed and, for a session key, whose."""

    public_key: str
    session_id: str | None = None
    account_id: str | None = None
    credential_id: str | None = None
    request_id: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)

    @property
    def actor(self) -> str:
        return self.session_id or f"key:{self.public_key}"


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def activity_payload(
    *, tenant: TenantContext, activity_type: str, parameters: Mapping[str, Any], request_id: str, now_ms: int
) -> str:
    """A payloadToSign in the reference's activity shape (compact, sorted keys), carrying the requestId so
    that a stamp over one challenge is never valid for another."""
    return canonical(
        {
            "organizationId": tenant.id,
            "parameters": parameters,
            "requestId": request_id,
            "timestampMs": str(now_ms),
            "type": activity_type,
        }
    )


async def begin(
    session: LeanSession, *, tenant: TenantContext, intent: SignedIntent, settings: Settings
) -> SignedRequestChallenge:
    """Store the pending challenge of `intent`; its 202 body."""
    now = clock.now(tenant)
    request_id = new_id("Request")
    expires_at = now + timedelta(seconds=settings.wallet_challenge_ttl_seconds)
    payload = intent.payload
    if payload is None:
        payload = activity_payload(
            tenant=tenant,
            activity_type=intent.activity_type,
            parameters=intent.parameters if intent.parameters is not None else intent.bound,
            request_id=request_id,
            now_ms=int(now.timestamp() * 1000),
        )
    await repository.insert_challenge(
        session,
        {
            "id": request_id,
            "tenant_id": tenant.id,
            "operation": intent.operation,
            "resource_id": intent.resource_id,
            "bound": canonical(intent.bound),
            "signers": intent.signers.stored(),
            "context": dict(intent.context),
            "payload": payload,
            "created_at": now,
            "expires_at": expires_at,
            "consumed_at": None,
        },
    )
    return SignedRequestChallenge(payload_to_sign=payload, request_id=request_id, expires_at=expires_at)


def _not_pending(request_id: str, why: str) -> WalletSignatureInvalid:
    return WalletSignatureInvalid(
        f"Request-Id {request_id[:80]!r} is not a pending challenge of this request: {why}",
        details={"requestId": request_id[:80]},
    )


async def complete(
    session: LeanSession, *, tenant: TenantContext, intent: SignedIntent, signature: WalletSignature
) -> Signed:
    """Verify and consume the retry of `intent` (see the module); the signer, or the specific 401."""
    if signature.signature is None:
        raise WalletSignatureMissing("the signed retry lacks the Svc-Wallet-Signature header")
    if signature.request_id is None:
        raise RequestIdMissing("the signed retry lacks the Request-Id header (the requestId of the 202)")
    try:
        stamp = stamps.parse(signature.signature)
    except stamps.StampMalformed as error:
        raise WalletSignatureMalformed(f"Svc-Wallet-Signature: {error}") from None
    request_id = signature.request_id
    now = clock.now(tenant)
    # Consumed first, in one statement: every refusal below rolls the consumption back with the transaction.
    challenge = (
        await repository.take_challenge(session, tenant_id=tenant.id, request_id=request_id, now=now)
        if is_id(request_id, "Request")
        else None
    )
    if challenge is None:
        raise _not_pending(
            request_id, await _why_not_pending(session, tenant=tenant, request_id=request_id, now=now)
        )
    if challenge.operation != intent.operation or challenge.resource_id != intent.resource_id:
        raise _not_pending(request_id, "it was issued for another operation or resource")
    if canonical(intent.bound) != challenge.bound:
        raise WalletSignatureBodyMismatch(
            "the retry's body differs from the fields bound into payloadToSign on the first call; resend the "
            "same body"
        )
    signers = Signers.from_stored(challenge.signers)
    signer = await _allowed_signer(session, tenant=tenant, stamp=stamp, signers=signers, now=now)
    if not stamp.verifies(challenge.payload):
        raise WalletSignatureInvalid(
            "the stamp's signature does not verify over this challenge's payloadToSign"
        )
    return Signed(
        public_key=signer.public_key,
        session_id=signer.session_id,
        account_id=signer.account_id,
        credential_id=signer.credential_id,
        request_id=request_id,
        context=challenge.context or {},
    )


async def _why_not_pending(session: LeanSession, *, tenant: TenantContext, request_id: str, now: Any) -> str:
    existing = (
        await repository.get_challenge(session, tenant_id=tenant.id, request_id=request_id)
        if is_id(request_id, "Request")
        else None
    )
    if existing is None:
        return "no such requestId"
    if existing.consumed_at is not None:
        return "it was already used"
    return "it expired"


async def _allowed_signer(
    session: LeanSession, *, tenant: TenantContext, stamp: stamps.Stamp, signers: Signers, now: Any
) -> Signed:
    if signers.public_key is not None:
        if stamp.public_key_hex != signers.public_key:
            raise WalletSignatureInvalid("the stamp's publicKey is not the key bound into this challenge")
        return Signed(public_key=stamp.public_key_hex)
    row = await repository.signing_session(
        session,
        tenant_id=tenant.id,
        public_key=stamp.public_key_hex,
        account_ids=signers.account_ids,
        excluded_credential_ids=signers.excluded_credential_ids,
        now=now,
    )
    if row is None:
        raise WalletSignatureInvalid(
            "the stamp's publicKey is not an active session of a credential allowed to sign this request"
        )
    return Signed(
        public_key=stamp.public_key_hex,
        session_id=row.id,
        account_id=row.account_id,
        credential_id=row.credential_id,
    )


async def verify_stamp(
    session: LeanSession, *, tenant: TenantContext, payload: str, header: str | None, signers: Signers
) -> Signed:
    """A stamp over `payload` with no challenge step (quote execution): the same checks as `complete`
    but for the Request-Id and the bound fields."""
    if header is None:
        raise WalletSignatureMissing("this request needs a Svc-Wallet-Signature stamp over its payloadToSign")
    try:
        stamp = stamps.parse(header)
    except stamps.StampMalformed as error:
        raise WalletSignatureMalformed(f"Svc-Wallet-Signature: {error}") from None
    signer = await _allowed_signer(
        session, tenant=tenant, stamp=stamp, signers=signers, now=clock.now(tenant)
    )
    if not stamp.verifies(payload):
        raise WalletSignatureInvalid("the stamp's signature does not verify over payloadToSign")
    return signer


S = TypeVar("S", bound=LeanSession)
Prepare = Callable[[S, bool], Awaitable[SignedIntent]]
Then = Callable[[S, Signed | None], Awaitable[ApiModel | None]]


async def execute(
    db: Database,
    *,
    tenant: TenantContext,
    signature: WalletSignature,
    prepare: Prepare[S],
    then: Then[S],
    settings: Settings,
    status: int = 200,
    transaction: Callable[[], AbstractAsyncContextManager[S]] | None = None,
) -> Response:
    """One signed operation's request, in one transaction: the 202 challenge when `signature` is absent,
    else the verified retry and the operation (`status`, or 204 when `then` returns None). An intent that
    needs no signature runs at once. `transaction` opens the unit of work instead of `db.transaction` (an
    attempt that counts itself in it; its lean transaction when `prepare` and `then` run lean statements
    only); `prepare` and `then` take what it yields."""
    first = signature.absent
    unit = transaction or cast("Callable[[], AbstractAsyncContextManager[S]]", db.transaction)
    async with unit() as session:
        intent = await prepare(session, first)
        if not intent.signature_required:
            result = await then(session, None)
        elif first:
            challenge = await begin(session, tenant=tenant, intent=intent, settings=settings)
            return JSONResponse({**challenge.to_api(), **intent.response_extra}, status_code=202)
        else:
            signed = await complete(session, tenant=tenant, intent=intent, signature=signature)
            result = await then(session, signed)
    if result is None:
        return Response(status_code=204)
    return JSONResponse(result.to_api(), status_code=status)
