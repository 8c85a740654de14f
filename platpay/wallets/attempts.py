"""Abuse limits of verify and challenge (429 RATE_LIMITED + Retry-After, kit/rate_limits.py): every attempt
counts once against its credential's and its wallet's limit, held in the database so they apply across
processes.

An attempt that succeeds is counted in the transaction that does its work (no transaction of its own on the
way to a session); one that fails — a wrong OTP, a bad token, a bad assertion, any 4xx — is counted in a
transaction of its own once its work has rolled back, so that failing attempts add up. An attempt over a
limit is refused before any work and not counted again. Counting reads the credential (404 for an unknown
one) with its row locked until the attempt's transaction ends: attempts at one credential run one after the
other on PostgreSQL, and the work takes it from the attempt (`credential`) without reading it again.

The work's transaction is an ORM session (`transaction()`) or, for work whose every statement is lean (an
EMAIL_OTP challenge and verify: the target is >= 200 logins/s on one process), `lean_transaction()`
(`Database.lean_transaction()`: no ORM session on PostgreSQL; on SQLite an ORM session still, where the
counting takes the limits' own upsert); the counting is lean in either, and a failed attempt is counted in
a lean transaction."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.db.database import Database
from platpay.db.unit_of_work import LeanSession
from platpay.errors import ApiError, RateLimited
from platpay.kit import clock, rate_limits
from platpay.tenants.context import TenantContext
from platpay.wallets import credentials
from platpay.wallets.models import CredentialRow

T = TypeVar("T")
S = TypeVar("S", bound=LeanSession)


class Attempt:
    def __init__(
        self, db: Database, *, tenant: TenantContext, credential_id: str, kind: str, settings: Settings
    ) -> None:
        self.db, self.tenant, self.credential_id, self.kind = db, tenant, credential_id, kind
        verify = kind == "verify"
        self.per_credential = settings.wallet_verify_limit if verify else settings.wallet_challenge_limit
        self.per_wallet = (
            settings.wallet_verify_account_limit if verify else settings.wallet_challenge_account_limit
        )
        self.window = settings.wallet_limit_window_seconds
        self.counted = False
        self._credential: CredentialRow | None = None
        # What an EMAIL_OTP verify's work takes first, taken on PostgreSQL by the counting statement
        # (repository.counted_credential) and handed to the work's own take: the credential's OTP (the
        # first leg, otp.check_attempt) or the signed retry's challenge by its Request-Id (the second leg,
        # signed_retry.complete).
        self.takes_otp = False
        self.retry_request_id: str | None = None

    @property
    def credential(self) -> CredentialRow:
        """The live credential, read with its row locked when this attempt was counted (in the open
        transaction: an instance of an ORM session, a snapshot in a lean transaction)."""
        if self._credential is None:
            raise RuntimeError("the attempt's credential is read when its transaction begins")
        return self._credential

    def _limits(self, account_id: str) -> list[rate_limits.Limit]:
        what = f"{self.kind} attempts for this"
        return [
            rate_limits.Limit(
                f"wallets.{self.kind}:{self.credential_id}",
                self.per_credential,
                self.window,
                f"{what} credential",
            ),
            rate_limits.Limit(
                f"wallets.{self.kind}:{account_id}", self.per_wallet, self.window, f"{what} wallet"
            ),
        ]

    async def _record(self, session: LeanSession, *, work: bool = False) -> RateLimited | None:
        now = clock.now(self.tenant)
        if isinstance(session, AsyncSession):
            # An ORM session (SQLite's attempts run in one: `_lean_unit`): the credential as an instance of it
            # (work may change it), counted with the limits' own upsert.
            credential = await credentials.live_credential(
                session, tenant=self.tenant, credential_id=self.credential_id, for_update=True
            )
            self._credential = credential
            return await rate_limits.record(session, limits=self._limits(credential.account_id), now=now)
        # A lean transaction (PostgreSQL): read, locked and counted in one statement.
        per_credential, per_wallet = self._limits("")
        found = await credentials.counted_credential(
            session,
            tenant=self.tenant,
            credential_id=self.credential_id,
            credential_limit=(per_credential.key, *rate_limits.window_of(per_credential, now)),
            account_limit=(per_wallet.key, *rate_limits.window_of(per_wallet, now)),
            retry_request_id=self.retry_request_id if work else None,
            take_otp=self.takes_otp and work,
            now=now,
        )
        self._credential, counts = found
        return rate_limits.refusal(self._limits(self._credential.account_id), counts, now)

    def transaction(self) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
        """The attempt's work, counted in its own transaction (429 before any work when over a limit)."""
        return self._counted(self.db.transaction())

    def lean_transaction(self) -> contextlib.AbstractAsyncContextManager[LeanSession]:
        """`transaction()` for work whose every statement is lean: `Database.lean_transaction()`."""
        return self._counted(self._lean_unit())

    def _lean_unit(self) -> contextlib.AbstractAsyncContextManager[LeanSession]:
        # On SQLite an ORM session: an attempt is counted there with the limits' own upsert (`_record`),
        # the one-statement count is PostgreSQL's (data-modifying CTEs).
        return self.db.transaction() if self.db.is_sqlite else self.db.lean_transaction()

    @contextlib.asynccontextmanager
    async def _counted(self, unit: contextlib.AbstractAsyncContextManager[S]) -> AsyncIterator[S]:
        async with unit as session:
            refusal = await self._record(session, work=True)
            if refusal is not None:
                raise refusal
            yield session
        self.counted = True

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """`work()` (which opens `transaction()` for its database work); a refused attempt is counted apart."""
        try:
            return await work()
        except ApiError as error:
            if error.status < 500 and not isinstance(error, RateLimited) and not self.counted:
                with contextlib.suppress(ApiError):  # an unknown credential has nothing to count
                    async with self._lean_unit() as session:
                        await self._record(session)
            raise
