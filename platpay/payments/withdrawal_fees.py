"""Crypto withdrawal fee estimates (POST /crypto/estimate-withdrawal-fee).

The fee table is data (data/withdrawal_fees.json): per network, the asset its fee is paid in, a fixed
network fee in that asset's minor units and the assets that can leave over it, plus one application fee
rate. An estimate moves no money and holds nothing:

    networkFee     the table's fee, in minor units of networkFeeAsset (lamports, wei, sun, satoshis)
    applicationFee ceil(amount × applicationFeeBps / 10 000), in the withdrawal currency
    totalFee       networkFee converted to the withdrawal currency at the mid rate (platpay.fx.service, rounded
                   half-even to its minor unit) + applicationFee
    netAmount      amount − totalFee, which must stay above zero
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.state import InternalAccountStatus, InternalAccountType
from platpay.accounts.validators import bitcoin, lightning, wallets
from platpay.errors import InvalidInput
from platpay.fx import service as fx_service
from platpay.payments.errors import AmountOutOfRange
from platpay.payments.lookups.schemas import EstimateCryptoWithdrawalFeeResponse
from platpay.tenants.context import TenantContext

CRYPTO_ACCOUNT_TYPES = frozenset({InternalAccountType.INTERNAL_CRYPTO, InternalAccountType.EMBEDDED_WALLET})


def _lightning_destination(value: str) -> str:
    lowered = value.lower()
    if lowered.startswith("lno1"):
        return lightning.validate_bolt12_offer(value)
    if lowered.startswith(("ln", "lightning:")) and "@" not in lowered:
        return lightning.validate_bolt11_invoice(value)
    return lightning.validate_lightning_address(value)


# How each network's destination is checked; the validators raise IdentifierError saying which rule failed.
ADDRESS_CHECKS: dict[str, Callable[[str], str]] = {
    "SOLANA": wallets.validate_solana_address,
    "ETHEREUM": wallets.validate_evm_address,
    "BASE": wallets.validate_evm_address,
    "POLYGON": wallets.validate_evm_address,
    "TRON": wallets.validate_tron_address,
    "SPARK": wallets.validate_spark_address,
    "LIGHTNING": _lightning_destination,
    "BITCOIN": bitcoin.validate_bitcoin_address,
}


@dataclass(frozen=True)
class NetworkFee:
    network: str
    fee_asset: str
    fee: int  # minor units of fee_asset
    currencies: tuple[str, ...]


@cache
def _table() -> dict[str, Any]:
    raw = resources.files("platpay.payments").joinpath("data/withdrawal_fees.json").read_text("utf-8")
    return json.loads(raw)


def network_fee(network: str) -> NetworkFee:
    entry = _table()["networks"][network]
    return NetworkFee(
        network=network,
        fee_asset=entry["networkFeeAsset"],
        fee=int(entry["networkFee"]),
        currencies=tuple(entry["currencies"]),
    )


def application_fee(amount: int) -> int:
    bps = int(_table()["applicationFeeBps"])
    return -(-amount * bps // 10_000)  # rounded up: the operator never charges a fraction of a minor unit


async def estimate(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    internal_account_id: str,
    currency: str,
    crypto_network: str,
    amount: int,
    destination_address: str,
) -> EstimateCryptoWithdrawalFeeResponse:
    """The fees of withdrawing `amount` minor units of `currency` from the crypto internal account
    `internal_account_id` over `crypto_network` (a key of ADDRESS_CHECKS) to `destination_address`."""
    account = await accounts_service.get_internal(
        session, tenant_id=tenant.id, account_id=internal_account_id
    )
    problems: list[dict[str, str]] = []
    if account.type not in CRYPTO_ACCOUNT_TYPES:
        problems.append(
            {
                "field": "internalAccountId",
                "message": f"{account.id} is a {account.currency} {account.type} account; withdrawals to a "
                "blockchain address leave from a crypto account",
            }
        )
    elif account.status != InternalAccountStatus.ACTIVE:
        problems.append({"field": "internalAccountId", "message": f"the account is {account.status}"})
    if currency != account.currency:
        problems.append(
            {"field": "currency", "message": f"the account holds {account.currency}, not {currency}"}
        )
    fees = network_fee(crypto_network)
    if currency not in fees.currencies:
        problems.append(
            {
                "field": "cryptoNetwork",
                "message": f"{currency} cannot be withdrawn over {crypto_network} "
                f"(it carries {', '.join(fees.currencies)})",
            }
        )
    try:
        ADDRESS_CHECKS[crypto_network](destination_address)
    except ValueError as error:  # IdentifierError
        problems.append(
            {"field": "destinationAddress", "message": f"not a {crypto_network} destination: {error}"}
        )
    if problems:
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        raise InvalidInput(summary, details={"fields": problems})

    converted = await fx_service.convert(
        source_currency=fees.fee_asset, destination_currency=currency, amount=fees.fee
    )
    app_fee = application_fee(amount)
    total = converted + app_fee
    if amount <= total:
        raise AmountOutOfRange(
            f"amount {amount} does not cover the {total} {currency} (minor units) of fees: nothing "
            "would arrive",
            details={
                "fields": [{"field": "amount", "message": f"must be more than the total fee {total}"}],
                "totalFee": total,
            },
        )
    return EstimateCryptoWithdrawalFeeResponse(
        network_fee=fees.fee,
        network_fee_asset=fees.fee_asset,
        application_fee=app_fee,
        total_fee=total,
        net_amount=amount - total,
    )
