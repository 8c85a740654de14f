"""POST /crypto/estimate-withdrawal-fee: the sandbox fee table per network, address checks per network, and
fees checked against the test's own arithmetic (the FX module only supplies the mid rate)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

import pytest

from platpay.fx import rates
from platpay.kit import currencies
from tests.factories import create_platform, customer, internal_account

ADDRESSES = {
    "SOLANA": "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU",
    "ETHEREUM": "0x52908400098527886e0f7030069857d2e4169ee7",
    "BASE": "0x52908400098527886E0F7030069857D2E4169EE7",
    "POLYGON": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "TRON": "T9yED5xMV5ARV98BexN97aLZ1UUq7eKSxm",
    "SPARK": "spark1pgssypc8qurswpc8qurswpc8qurswpc8qurswpc8qurswpc8qurswpc8ztcgyt",
    "LIGHTNING": "satoshi@example.com",
    "BITCOIN": "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4",
}
BAD_ADDRESSES = {
    "SOLANA": "0OIl",
    "ETHEREUM": "0x1234",
    "BASE": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD",  # breaks the EIP-55 checksum
    "POLYGON": "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU",
    "TRON": "T9yED5xMV5ARV98BexN97aLZ1UUq7eKSxn",
    "SPARK": "spark1invalid",
    "LIGHTNING": "not a destination",
    "BITCOIN": "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb",
}
# network -> (fee asset, fee in its minor units), as the sandbox table documents
TABLE = {
    "SOLANA": ("SOL", 5_000),
    "ETHEREUM": ("ETH", 150_000_000_000_000),
    "BASE": ("ETH", 2_000_000_000_000),
    "POLYGON": ("POL", 10_000_000_000_000_000),
    "TRON": ("TRX", 6_500_000),
    "SPARK": ("BTC", 0),
    "LIGHTNING": ("BTC", 10),
    "BITCOIN": ("BTC", 2_000),
}
CASES = [
    ("SOLANA", "USDC", 1_000_000),
    ("SOLANA", "USDT", 25_000_000),
    ("ETHEREUM", "USDC", 50_000_000),
    ("BASE", "USDC", 3_000_000),
    ("POLYGON", "USDC", 3_000_000),
    ("TRON", "USDT", 100_000_000),
    ("SPARK", "USDB", 1_000_000),
    ("SPARK", "BTC", 100_000),
    ("LIGHTNING", "BTC", 50_000),
    ("BITCOIN", "BTC", 1_000_000),
]


def expected_fees(network: str, currency: str, amount: int) -> dict[str, object]:
    asset, network_fee = TABLE[network]
    if asset == currency:
        converted = network_fee
    else:
        major = (
            Decimal(network_fee)
            / Decimal(10) ** currencies.require(asset).decimals
            * rates.mid_rate(asset, currency)
        )
        exact = major * Decimal(10) ** currencies.require(currency).decimals
        converted = int(exact.to_integral_value(rounding=ROUND_HALF_EVEN))
    application = -(-amount * 10 // 10_000)  # 10 bps, rounded up
    total = converted + application
    return {
        "networkFee": network_fee,
        "networkFeeAsset": asset,
        "applicationFee": application,
        "totalFee": total,
        "netAmount": amount - total,
    }


@pytest.fixture
async def crypto(client, db, settings):
    created = await create_platform(
        db, settings, name="Crypto Platform", currencies=["USD", "USDC", "USDT", "USDB", "BTC"]
    )
    auth = created["sandbox"]
    person = await customer(client, auth)
    accounts = {
        code: await internal_account(client, auth, person["id"], code)
        for code in ("USD", "USDC", "USDT", "USDB", "BTC")
    }
    return auth, accounts


async def _estimate(client, auth, account_id, currency, network, amount, address=None):
    body = {
        "internalAccountId": account_id,
        "currency": currency,
        "cryptoNetwork": network,
        "amount": amount,
        "destinationAddress": address if address is not None else ADDRESSES[network],
    }
    return await client.post("/crypto/estimate-withdrawal-fee", auth=auth, json=body)


class TestEstimate:
    @pytest.mark.parametrize(("network", "currency", "amount"), CASES)
    async def test_fees_per_network(self, client, crypto, network, currency, amount):
        auth, accounts = crypto
        response = await _estimate(client, auth, accounts[currency]["id"], currency, network, amount)
        assert response.status_code == 200, response.text
        assert response.json() == expected_fees(network, currency, amount)

    async def test_the_worked_example(self, client, crypto):
        auth, accounts = crypto
        response = await _estimate(client, auth, accounts["USDC"]["id"], "USDC", "SOLANA", 1_000_000)
        # 5 000 lamports = 0.000005 SOL at 1/0.006 USD per SOL = 0.000833 USDC; 10 bps of 1 USDC = 0.001.
        assert response.json() == {
            "networkFee": 5_000,
            "networkFeeAsset": "SOL",
            "applicationFee": 1_000,
            "totalFee": 1_833,
            "netAmount": 998_167,
        }

    async def test_platform_accounts_and_view_tokens_can_estimate(self, client, crypto):
        auth, _ = crypto
        usdc = (
            await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USDC"})
        ).json()
        token = (await client.post("/tokens", auth=auth, json={"name": "v", "permissions": ["VIEW"]})).json()
        response = await _estimate(
            client,
            (token["clientId"], token["clientSecret"]),
            usdc["data"][0]["id"],
            "USDC",
            "BASE",
            2_000_000,
        )
        assert response.status_code == 200, response.text
        assert response.json() == expected_fees("BASE", "USDC", 2_000_000)

    @pytest.mark.parametrize("network", sorted(BAD_ADDRESSES))
    async def test_the_address_must_fit_the_network(self, client, crypto, network):
        auth, accounts = crypto
        currency = {"TRON": "USDT", "SPARK": "USDB", "LIGHTNING": "BTC", "BITCOIN": "BTC"}.get(
            network, "USDC"
        )
        response = await _estimate(
            client, auth, accounts[currency]["id"], currency, network, 10_000_000, BAD_ADDRESSES[network]
        )
        assert response.status_code == 400, response.text
        [problem] = response.json()["details"]["fields"]
        assert problem["field"] == "destinationAddress" and network in problem["message"]

    async def test_lightning_takes_invoices_offers_and_addresses(self, client, crypto):
        auth, accounts = crypto
        invoice = (
            "lnbc1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpl2pkx2ctnv5sxxmmwwd5kgetjypeh2ursdae8g6"
            "twvus8g6rfwvs8qun0dfjkxaq8rkx3yf5tcsyz3d73gafnh3cax9rn449d9p5uxz9ezhhypd0elx87sjle52x86fux2ypatgddc6k63n7er"
            "qz25le42c4u4ecky03ylcqca784w"
        )
        offer = "lno1zcss9mk8y3wkklfvevcrszlmu23kfrxh49px20665dqwmn4p72pksese"
        for destination in (invoice, offer, "SATOSHI@Example.com"):
            response = await _estimate(
                client, auth, accounts["BTC"]["id"], "BTC", "LIGHTNING", 50_000, destination
            )
            assert response.status_code == 200, response.text

    async def test_every_bad_field_is_named_at_once(self, client, crypto):
        auth, accounts = crypto
        response = await _estimate(client, auth, accounts["USD"]["id"], "USDB", "SOLANA", 1_000_000, "nope")
        assert response.status_code == 400
        fields = [p["field"] for p in response.json()["details"]["fields"]]
        assert fields == ["internalAccountId", "currency", "cryptoNetwork", "destinationAddress"]

    async def test_the_currency_must_be_the_accounts(self, client, crypto):
        auth, accounts = crypto
        response = await _estimate(client, auth, accounts["USDC"]["id"], "USDT", "SOLANA", 1_000_000)
        assert response.status_code == 400
        assert [p["field"] for p in response.json()["details"]["fields"]] == ["currency"]

    async def test_the_network_must_carry_the_currency(self, client, crypto):
        auth, accounts = crypto
        response = await _estimate(client, auth, accounts["USDB"]["id"], "USDB", "ETHEREUM", 1_000_000)
        assert response.status_code == 400
        [problem] = response.json()["details"]["fields"]
        assert problem["field"] == "cryptoNetwork" and "USDC" in problem["message"]

    @pytest.mark.parametrize(
        ("network", "currency", "too_small", "enough"),
        [("BITCOIN", "BTC", 2_002, 2_010), ("TRON", "USDT", 1_626_000, 1_700_000)],
    )
    async def test_an_amount_that_does_not_cover_the_fees(
        self, client, crypto, network, currency, too_small, enough
    ):
        auth, accounts = crypto
        response = await _estimate(client, auth, accounts[currency]["id"], currency, network, too_small)
        assert response.status_code == 400 and response.json()["code"] == "AMOUNT_OUT_OF_RANGE"
        assert response.json()["details"]["fields"][0]["field"] == "amount"
        assert (
            response.json()["details"]["totalFee"] == expected_fees(network, currency, too_small)["totalFee"]
        )
        ok = await _estimate(client, auth, accounts[currency]["id"], currency, network, enough)
        assert ok.status_code == 200 and ok.json() == expected_fees(network, currency, enough)
        assert ok.json()["netAmount"] > 0

    async def test_unknown_and_other_tenants_accounts_are_404(self, client, crypto, platform):
        auth, accounts = crypto
        assert (
            await _estimate(client, auth, "InternalAccount:nope", "USDC", "SOLANA", 1_000_000)
        ).status_code == 404
        other = await _estimate(
            client, platform["sandbox"], accounts["USDC"]["id"], "USDC", "SOLANA", 1_000_000
        )
        assert other.status_code == 404

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("cryptoNetwork", "DOGECOIN"),
            ("amount", 0),
            ("amount", "100"),
            ("destinationAddress", ""),
            ("currency", None),
        ],
    )
    async def test_request_validation_names_the_field(self, client, crypto, field, value):
        auth, accounts = crypto
        body = {
            "internalAccountId": accounts["USDC"]["id"],
            "currency": "USDC",
            "cryptoNetwork": "SOLANA",
            "amount": 1_000_000,
            "destinationAddress": ADDRESSES["SOLANA"],
            field: value,
        }
        response = await client.post("/crypto/estimate-withdrawal-fee", auth=auth, json=body)
        assert response.status_code == 400
        assert response.json()["details"]["fields"][0]["field"] == field
