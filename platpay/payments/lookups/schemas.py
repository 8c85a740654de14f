"""Request and response bodies of the lookups: the UMA provider directory and crypto withdrawal fee estimates."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from platpay.kit.api_model import ApiModel, ApiRequest
from platpay.kit.money import Currency, MinorUnits
from platpay.kit.openapi import ExampleIds, request_examples
from platpay.kit.pagination import Page
from platpay.payments.schemas import MAX_AMOUNT

CryptoNetwork = Literal["SOLANA", "ETHEREUM", "BASE", "POLYGON", "TRON", "SPARK", "LIGHTNING", "BITCOIN"]


class UmaProvider(ApiModel):
    name: str = Field(examples=["Lightspark Group"])
    supported_regions: list[str] = Field(description="ISO 3166-1 alpha-2 countries it operates in")
    domain: str = Field(description="the domain of its UMA addresses", examples=["uma.me"])
    logo_url: str
    supported_currencies: list[Currency]
    lei: str = Field(description="Legal Entity Identifier (ISO 17442)")
    allow_list_status: bool = Field(description="whether the provider is on this platform's allow list")


class UmaProviderListResponse(Page[UmaProvider]):
    """GET /uma-providers."""


class EstimateCryptoWithdrawalFeeRequest(ApiRequest):
    internal_account_id: str = Field(
        min_length=1,
        max_length=64,
        description="the crypto internal account (INTERNAL_CRYPTO or EMBEDDED_WALLET)",
    )
    currency: str = Field(
        min_length=1,
        max_length=8,
        description="the asset to withdraw; the account's currency",
        examples=["USDC"],
    )
    crypto_network: CryptoNetwork = Field(description="the blockchain network to withdraw over")
    amount: MinorUnits = Field(gt=0, le=MAX_AMOUNT, description="minor units of `currency` to withdraw")
    destination_address: str = Field(
        min_length=1, max_length=2048, description="the address on `cryptoNetwork` the funds go to"
    )


class EstimateCryptoWithdrawalFeeResponse(ApiModel):
    network_fee: int = Field(description="the network (gas) fee in minor units of networkFeeAsset")
    network_fee_asset: str = Field(description="the asset the network fee is paid in", examples=["SOL"])
    application_fee: int = Field(description="the operator's fee in minor units of the withdrawal currency")
    total_fee: int = Field(
        description="networkFee converted to the withdrawal currency at the mid rate, plus applicationFee"
    )
    net_amount: int = Field(description="what the recipient receives: amount minus totalFee (minor units)")


ESTIMATE_WITHDRAWAL_FEE_EXAMPLES = request_examples(
    usdcOnSolana=(
        "Withdraw 1 USDC over Solana",
        {
            "internalAccountId": ExampleIds.CRYPTO_INTERNAL_ACCOUNT,
            "currency": "USDC",
            "cryptoNetwork": "SOLANA",
            "amount": 1000000,
            "destinationAddress": "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU",
        },
    )
)
