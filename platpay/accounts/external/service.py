"""External accounts: bank accounts, wallets and other destinations outside platpay, for customers and for
the platform. Validation per corridor lives in validators/; the sandbox beneficiary name check here."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import repository
from platpay.accounts.errors import DuplicateExternalAccount, ExternalAccountNotFound, InvalidBankAccount
from platpay.accounts.models import ExternalAccountRow
from platpay.accounts.providers import NewExternalAccount, provider_for
from platpay.accounts.schemas import BeneficiaryVerifiedData, ExternalAccount
from platpay.accounts.state import EXTERNAL_ACCOUNT, BeneficiaryVerificationStatus
from platpay.accounts.validators import corridors
from platpay.accounts.validators.corridor_specs import account_type_specs
from platpay.customers import service as customers_service
from platpay.errors import InvalidInput
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock, currencies
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.tenants.context import TenantContext

PLATFORM_OWNER = "platform"
STATUS_UPDATED = "EXTERNAL_ACCOUNT.STATUS_UPDATED"
REVIEW_JOB = "accounts.review_external_account"

_B = BeneficiaryVerificationStatus
# Sandbox name check: the last three characters of the account's primary identifier (INTERFACE-FACTS §7).
_NAME_CHECK = {
    "102": _B.NOT_MATCHED,
    "103": _B.PARTIAL_MATCH,
    "104": _B.PENDING,
    "106": _B.UNSUPPORTED,
    "107": _B.CHECKED_BY_RECEIVING_FI,
}
REJECTED_SUFFIX = "105"


def magic_suffix(identifier: str) -> str:
    """The three characters sandbox behaviour keys on; an email-like key carries them in its user part."""
    local = identifier.split("@", 1)[0] if "@" in identifier else identifier
    return local[-3:]


def _name_check(
    *, sandbox: bool, identifier: str, beneficiary: dict[str, Any] | None
) -> tuple[str | None, str | None]:
    if beneficiary is None:
        return None, None  # wallets carry no beneficiary: nothing to check
    if not sandbox:
        return _B.UNSUPPORTED, None  # no name-check provider is configured for production
    status = _NAME_CHECK.get(magic_suffix(identifier), _B.MATCHED)
    name = beneficiary.get("fullName") or beneficiary.get("legalName")
    verified = name if status in (_B.MATCHED, _B.PARTIAL_MATCH) else None
    return status, verified


def to_schema(row: ExternalAccountRow) -> ExternalAccount:
    return ExternalAccount(
        id=row.id,
        customer_id=row.customer_id,
        status=row.status,
        platform_account_id=row.platform_account_id,
        ownership_type=row.ownership_type,
        currency=row.currency,
        default_uma_deposit_account=row.default_uma_deposit_account,
        beneficiary_verification_status=row.beneficiary_verification_status,
        beneficiary_verified_data=BeneficiaryVerifiedData(full_name=row.beneficiary_verified_name)
        if row.beneficiary_verified_name
        else None,
        account_info=corridors.response_account_info(row.account_info),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def create_external_account(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    customer_id: str | None,
    currency: str,
    account_info: Any,
    platform_account_id: str | None,
    default_uma_deposit_account: bool,
    ownership_type: str | None = None,
) -> ExternalAccount:
    """Register an external account: validated per corridor, checked for duplicates, name-checked, and
    ACTIVE unless the account provider holds it for a review or ownership verification (then a job
    applies the review's outcome, EXTERNAL_ACCOUNT.STATUS_UPDATED)."""
    currencies.require(currency, field="currency")
    if customer_id is not None:
        await customers_service.load_active(session, tenant_id=tenant.id, customer_id=customer_id)
    elif default_uma_deposit_account:
        raise InvalidInput(
            "defaultUmaDepositAccount applies to customer accounts only",
            details={"fields": [{"field": "defaultUmaDepositAccount", "message": "needs a customerId"}]},
        )
    info = corridors.validate_account_info(currency=currency, account_info=account_info)
    identifier = corridors.primary_identifier(info)
    if tenant.is_sandbox and magic_suffix(identifier) == REJECTED_SUFFIX:
        raise InvalidBankAccount(
            f"the receiving institution rejected account {identifier} (sandbox suffix {REJECTED_SUFFIX})",
            details={
                "fields": [{"field": "accountInfo", "message": "rejected by the receiving institution"}]
            },
        )
    owner_key = customer_id or PLATFORM_OWNER
    identity_key = corridors.duplicate_key(info)[:200]
    duplicate = await repository.find_external_duplicate(
        session, tenant_id=tenant.id, owner_key=owner_key, identity_key=identity_key
    )
    if duplicate is not None:
        raise DuplicateExternalAccount(
            f"this {info['accountType']} is already registered for this owner as {duplicate}",
            details={"existingAccountId": duplicate},
        )
    now = clock.now()
    if default_uma_deposit_account and customer_id is not None:
        await repository.clear_default_deposit(session, tenant_id=tenant.id, customer_id=customer_id, now=now)
    name_check, verified_name = _name_check(
        sandbox=tenant.is_sandbox, identifier=identifier, beneficiary=info.get("beneficiary")
    )
    provider = provider_for(tenant)
    review = provider.review(
        NewExternalAccount(
            account_type=info["accountType"],
            kind=account_type_specs()[info["accountType"]].kind,
            ownership_type=ownership_type,
            identifier=identifier,
            platform_account_id=platform_account_id,
        )
    )
    if review.status not in EXTERNAL_ACCOUNT.initial:
        raise ValueError(f"account provider {provider.name}: an account cannot start {review.status}")
    row = ExternalAccountRow(
        id=new_id("ExternalAccount"),
        tenant_id=tenant.id,
        customer_id=customer_id,
        owner_key=owner_key,
        identity_key=identity_key,
        currency=currency,
        account_type=info["accountType"],
        account_info=info,
        status=review.status,
        ownership_type=ownership_type,
        platform_account_id=platform_account_id,
        default_uma_deposit_account=default_uma_deposit_account,
        beneficiary_verification_status=name_check,
        beneficiary_verified_name=verified_name,
        created_at=now,
        updated_at=now,
        deleted_at=None,
    )
    session.add(row)
    await session.flush()
    if review.outcome is not None:
        await jobs_service.enqueue(
            session,
            REVIEW_JOB,
            {"tenantId": tenant.id, "accountId": row.id, "status": review.outcome},
            tenant_id=tenant.id,
            run_at=now + provider.delay(),
        )
    return to_schema(row)


async def update_status(
    session: AsyncSession, *, tenant_id: str, account_id: str, status: str
) -> ExternalAccount | None:
    """Move a live external account to `status` (a review's outcome, or what a production account provider
    reports) with EXTERNAL_ACCOUNT.STATUS_UPDATED; None, changing nothing, when the account is gone or its
    status cannot move there (already moved, deleted): a provider's late or repeated report is not an error."""
    target = EXTERNAL_ACCOUNT.state(status)
    if target is None:
        raise ValueError(f"{status!r} is not an external account status")
    row = await repository.get_external(session, tenant_id=tenant_id, account_id=account_id, for_update=True)
    if row is None or not EXTERNAL_ACCOUNT.can_move(row.status, target):
        return None
    row.status = EXTERNAL_ACCOUNT.move(row.status, target, subject=row.id)
    row.updated_at = clock.now()
    await session.flush()
    account = to_schema(row)
    await events_service.emit(session, tenant_id=tenant_id, type=STATUS_UPDATED, resource=account)
    return account


async def find(session: AsyncSession, *, tenant_id: str, account_id: str) -> ExternalAccountRow | None:
    """A live external account of the tenant, whoever owns it."""
    return await repository.get_external(session, tenant_id=tenant_id, account_id=account_id)


async def load(
    session: AsyncSession, *, tenant_id: str, account_id: str, platform: bool
) -> ExternalAccountRow:
    row = await repository.get_external(session, tenant_id=tenant_id, account_id=account_id)
    if row is None or (row.customer_id is None) != platform:
        raise ExternalAccountNotFound(account_id)
    return row


async def get_external_account(
    session: AsyncSession, *, tenant_id: str, account_id: str, platform: bool
) -> ExternalAccount:
    return to_schema(await load(session, tenant_id=tenant_id, account_id=account_id, platform=platform))


async def list_external_accounts(
    session: AsyncSession,
    *,
    tenant_id: str,
    platform: bool,
    params: PageParams,
    customer_id: str | None = None,
    currency: str | None = None,
    platform_account_id: str | None = None,
) -> PageResult[ExternalAccountRow]:
    stmt = repository.external_query(
        tenant_id=tenant_id,
        platform=platform,
        customer_id=customer_id,
        currency=currency,
        platform_account_id=platform_account_id,
    )
    return await paginate(session, stmt, id_column=ExternalAccountRow.id, params=params)


async def delete_external_account(
    session: AsyncSession, *, tenant_id: str, account_id: str, platform: bool
) -> None:
    row = await load(session, tenant_id=tenant_id, account_id=account_id, platform=platform)
    now = clock.now()
    row.deleted_at = now
    row.updated_at = now
    row.default_uma_deposit_account = False
    await session.flush()


async def default_uma_deposit_account(
    session: AsyncSession, *, tenant_id: str, customer_id: str
) -> ExternalAccountRow | None:
    """Where the customer's incoming UMA payments land instead of its internal account, if anywhere."""
    return await repository.default_deposit_account(session, tenant_id=tenant_id, customer_id=customer_id)
