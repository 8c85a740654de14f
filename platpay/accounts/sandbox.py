"""The sandbox's account provider (accounts/providers.py): magic values, like the rails' (INTERFACE-FACTS §7).

Internal accounts, by the last three characters of the owning customer's email before the `@` (e.g.
`jane.301@example.com`; the platform's own accounts and customers without an email open at once):
`301` opens PENDING and is provisioned after PLATPAY_SANDBOX_ACCOUNT_DELAY_SECONDS (ACTIVE, deposit details
issued), `302` opens PENDING and provisioning is refused (FAILED), `303` opens PENDING and every attempt
finds the institution unavailable until they run out (FAILED after `provisioning.MAX_ATTEMPTS`).

External accounts, by the last three characters of `platformAccountId`, or of the account's identifier
when it has none (the range 2xx is free beside the name check's 1xx and the payouts' 0xx):
`201`/`202`/`203` hold a FIRST_PARTY wallet for ownership verification (PENDING_OWNERSHIP_VERIFICATION),
which after the delay succeeds (ACTIVE), fails (UNVERIFIED) or stays pending; ownership verification
applies to self-custody wallets owned by the customer only, so on any other account these do nothing.
`204`/`205` put any account UNDER_REVIEW, which ends ACTIVE / INACTIVE after the delay.
"""

from __future__ import annotations

from datetime import timedelta

from platpay.accounts.external.service import magic_suffix
from platpay.accounts.providers import (
    ISSUED,
    REFUSED,
    RETRY,
    SANDBOX_ACCOUNTS,
    AccountProvider,
    ExternalReview,
    NewExternalAccount,
    NewInternalAccount,
)
from platpay.accounts.state import ExternalAccountStatus
from platpay.accounts.validators.corridor_specs import WALLET
from platpay.config import Settings

_S = ExternalAccountStatus

# suffix -> what every provisioning attempt answers (such an account opens PENDING)
_PROVISIONING = {"301": ISSUED, "302": REFUSED, "303": RETRY}

_OWNERSHIP = {
    "201": ExternalReview(_S.PENDING_OWNERSHIP_VERIFICATION, _S.ACTIVE),
    "202": ExternalReview(_S.PENDING_OWNERSHIP_VERIFICATION, _S.UNVERIFIED),
    "203": ExternalReview(_S.PENDING_OWNERSHIP_VERIFICATION),
}
_REVIEW = {
    "204": ExternalReview(_S.UNDER_REVIEW, _S.ACTIVE),
    "205": ExternalReview(_S.UNDER_REVIEW, _S.INACTIVE),
}


def _provisioning(account: NewInternalAccount) -> str | None:
    return _PROVISIONING.get(magic_suffix(account.owner_email)) if account.owner_email else None


class SandboxAccounts:
    name = "sandbox"
    reads_owner_email = True

    def __init__(self, delay: timedelta = timedelta(0)) -> None:
        self._delay = delay

    def opens_at_once(self, account: NewInternalAccount) -> bool:
        return _provisioning(account) is None

    def provision(self, account: NewInternalAccount, *, attempt: int) -> str:
        return _provisioning(account) or ISSUED

    def review(self, account: NewExternalAccount) -> ExternalReview:
        suffix = magic_suffix(account.platform_account_id or account.identifier)
        if suffix in _OWNERSHIP:
            if account.kind == WALLET and account.ownership_type == "FIRST_PARTY":
                return _OWNERSHIP[suffix]
            return ExternalReview()
        return _REVIEW.get(suffix, ExternalReview())

    def delay(self) -> timedelta:
        return self._delay


@SANDBOX_ACCOUNTS.implementation("sandbox")
def _sandbox(settings: Settings) -> AccountProvider:
    return SandboxAccounts(timedelta(seconds=settings.sandbox_account_delay_seconds))
