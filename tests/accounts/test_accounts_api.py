"""Internal and external accounts and discoveries through the HTTP API (both databases)."""

from __future__ import annotations

import pytest

from platpay.accounts import instructions
from platpay.accounts.validators import checksums, wallets
from tests.accounts.examples import INVALID, VALID
from tests.factories import create_platform

JANE = {"customerType": "INDIVIDUAL", "fullName": "Jane Doe"}


async def _customer(client, auth, **extra):
    response = await client.post("/customers", auth=auth, json={**JANE, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def _info(account_type, info):
    return {"accountType": account_type, **info}


class TestInternalAccounts:
    async def test_platform_accounts_one_per_supported_currency(self, client, auth):
        body = (await client.get("/platform/internal-accounts", auth=auth)).json()
        assert set(body) == {"data"}
        assert sorted(a["balance"]["currency"]["code"] for a in body["data"]) == ["USD", "USDB", "USDC"]
        assert all("customerId" not in a and a["status"] == "ACTIVE" for a in body["data"])
        usdb = next(a for a in body["data"] if a["balance"]["currency"]["code"] == "USDB")
        assert usdb["type"] == "INTERNAL_CRYPTO"
        assert (
            await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USD"})
        ).json()["data"][0]["type"] == "INTERNAL_FIAT"

    async def test_funding_instructions_are_valid_and_deterministic(self, client, db, settings):
        created = await create_platform(
            db,
            settings,
            currencies=["USD", "EUR", "MXN", "GBP", "BRL", "INR", "JPY", "USDC", "USDT", "BTC", "USDB"],
        )
        auth = created["sandbox"]
        customer = await _customer(client, auth)
        first = (
            await client.get(
                "/customers/internal-accounts", auth=auth, params={"customerId": customer["id"], "limit": 100}
            )
        ).json()
        second = (
            await client.get(
                "/customers/internal-accounts", auth=auth, params={"customerId": customer["id"], "limit": 100}
            )
        ).json()
        assert first == second
        # one holding account per configured currency, and in USDB the embedded wallet too
        assert len(first["data"]) == 12
        assert sorted(a["type"] for a in first["data"] if a["balance"]["currency"]["code"] == "USDB") == [
            "EMBEDDED_WALLET",
            "INTERNAL_CRYPTO",
        ]
        infos = {
            a["balance"]["currency"]["code"]: a["fundingPaymentInstructions"][0]
            for a in first["data"]
            if a["type"] != "EMBEDDED_WALLET"
        }
        assert len(infos) == 11
        usd = infos["USD"]["accountOrWalletInfo"]
        assert checksums.validate_aba_routing_number(usd["routingNumber"]) and usd["reference"].startswith(
            "PP"
        )
        assert infos["USD"]["isPlatformAccount"] is True
        checksums.validate_iban(infos["EUR"]["accountOrWalletInfo"]["iban"])
        checksums.validate_clabe(infos["MXN"]["accountOrWalletInfo"]["clabeNumber"])
        assert infos["BRL"]["accountOrWalletInfo"]["qrCode"].startswith("000201")
        assert "reference" not in infos["INR"]["accountOrWalletInfo"]
        assert infos["JPY"]["accountOrWalletInfo"]["accountType"] == "SWIFT_ACCOUNT"
        wallets.validate_solana_address(infos["USDC"]["accountOrWalletInfo"]["address"])
        wallets.validate_tron_address(infos["USDT"]["accountOrWalletInfo"]["address"])
        wallets.validate_spark_address(infos["BTC"]["accountOrWalletInfo"]["address"])
        assert infos["USDB"]["accountOrWalletInfo"] | {"address": None} == {
            "accountType": "SPARK_WALLET",
            "assetType": "USDB",
            "address": None,
        }
        references = {i["accountOrWalletInfo"].get("reference") for i in infos.values()} - {None}
        assert len(references) == 5  # USD, EUR, MXN, GBP, JPY: each account has its own deposit reference

    async def test_filters_and_pagination(self, client, auth):
        a = await _customer(client, auth)
        await _customer(client, auth)
        all_accounts = (
            await client.get("/customers/internal-accounts", auth=auth, params={"limit": 5})
        ).json()
        # each customer: USD, USDC and USDB holding accounts and the USDB embedded wallet
        assert (
            all_accounts["totalCount"] == 8
            and all_accounts["hasMore"] is True
            and len(all_accounts["data"]) == 5
        )
        rest = (
            await client.get(
                "/customers/internal-accounts",
                auth=auth,
                params={"limit": 5, "cursor": all_accounts["nextCursor"]},
            )
        ).json()
        assert rest["hasMore"] is False and len({x["id"] for x in all_accounts["data"] + rest["data"]}) == 8
        usdc = (
            await client.get("/customers/internal-accounts", auth=auth, params={"currency": "USDC"})
        ).json()
        assert usdc["totalCount"] == 2
        wallets_ = (
            await client.get(
                "/customers/internal-accounts",
                auth=auth,
                params={"type": "EMBEDDED_WALLET", "customerId": a["id"]},
            )
        ).json()
        assert [w["customerId"] for w in wallets_["data"]] == [a["id"]]
        usdb = (
            await client.get(
                "/customers/internal-accounts", auth=auth, params={"currency": "USDB", "customerId": a["id"]}
            )
        ).json()
        assert [x["type"] for x in usdb["data"]] == ["EMBEDDED_WALLET", "INTERNAL_CRYPTO"]  # newest first
        holding = (
            await client.get(
                "/customers/internal-accounts",
                auth=auth,
                params={"currency": "USDB", "customerId": a["id"], "type": "INTERNAL_CRYPTO"},
            )
        ).json()
        assert [x["id"] for x in holding["data"]] == [usdb["data"][1]["id"]]
        assert "privateEnabled" not in holding["data"][0] and usdb["data"][0]["privateEnabled"] is False
        assert (
            await client.get("/customers/internal-accounts", auth=auth, params={"type": "SAVINGS"})
        ).status_code == 400

    async def test_a_currency_added_later_opens_accounts_for_everyone(self, client, auth, runner):
        customers = [await _customer(client, auth) for _ in range(3)]
        config = (await client.get("/config", auth=auth)).json()
        currencies = [
            {
                k: c[k]
                for k in (
                    "currencyCode",
                    "minAmount",
                    "maxAmount",
                    "requiredCounterpartyFields",
                    "enabledTransactionTypes",
                )
            }
            for c in config["supportedCurrencies"]
        ]
        currencies.append(
            {
                "currencyCode": "EUR",
                "minAmount": 1,
                "maxAmount": 10**9,
                "requiredCounterpartyFields": [],
                "enabledTransactionTypes": ["OUTGOING", "INCOMING"],
            }
        )
        assert (
            await client.patch("/config", auth=auth, json={"supportedCurrencies": currencies})
        ).status_code == 200
        platform_eur = (
            await client.get("/platform/internal-accounts", auth=auth, params={"currency": "EUR"})
        ).json()["data"]
        assert len(platform_eur) == 1
        await runner.run_until_idle()
        eur = (await client.get("/customers/internal-accounts", auth=auth, params={"currency": "EUR"})).json()
        assert sorted(a["customerId"] for a in eur["data"]) == sorted(c["id"] for c in customers)
        await runner.run_until_idle()  # re-running the backfill changes nothing
        assert (
            await client.get("/customers/internal-accounts", auth=auth, params={"currency": "EUR"})
        ).json()["totalCount"] == 3
        later = await _customer(client, auth)
        assert (
            await client.get("/customers/internal-accounts", auth=auth, params={"customerId": later["id"]})
        ).json()["totalCount"] == 5  # USD, USDC, USDB (holding and wallet), EUR


class TestExternalAccounts:
    @pytest.mark.parametrize("account_type", sorted(VALID))
    async def test_every_account_type_registers_and_reads_back(self, client, db, settings, account_type):
        currency, info = VALID[account_type]
        created = await create_platform(db, settings, currencies=["USD"])
        auth = created["sandbox"]
        customer = await _customer(client, auth)
        response = await client.post(
            "/customers/external-accounts",
            auth=auth,
            json={
                "customerId": customer["id"],
                "currency": currency,
                "platformAccountId": "ext-1",
                "accountInfo": _info(account_type, info),
            },
        )
        assert response.status_code == 201, response.text
        body = response.json()
        assert body["id"].startswith("ExternalAccount:") and body["status"] == "ACTIVE"
        assert body["customerId"] == customer["id"] and body["accountInfo"]["accountType"] == account_type
        if "beneficiary" in info:
            assert (
                body["beneficiaryVerificationStatus"] == "MATCHED" and "paymentRails" in body["accountInfo"]
            )
        fetched = await client.get(f"/customers/external-accounts/{body['id']}", auth=auth)
        assert fetched.json() == body

    @pytest.mark.parametrize("account_type", sorted(INVALID))
    async def test_every_account_type_refuses_invalid_details(self, client, auth, account_type):
        currency, changes, field = INVALID[account_type]
        _valid_currency, info = VALID[account_type]
        bad = {k: v for k, v in {**info, **changes}.items() if v is not None}
        customer = await _customer(client, auth)
        response = await client.post(
            "/customers/external-accounts",
            auth=auth,
            json={
                "customerId": customer["id"],
                "currency": currency,
                "accountInfo": _info(account_type, bad),
            },
        )
        assert response.status_code == 400, response.text
        error = response.json()
        assert error["code"] in ("INVALID_INPUT", "INVALID_BANK_ACCOUNT", "INVALID_CURRENCY")
        named = " ".join(f["field"] for f in error["details"]["fields"])
        assert field in named or field == "", error
        listed = (await client.get("/customers/external-accounts", auth=auth)).json()
        assert listed["totalCount"] == 0

    async def test_duplicates_per_owner_are_409(self, client, auth):
        a, b = await _customer(client, auth), await _customer(client, auth)
        currency, info = VALID["USD_ACCOUNT"]
        body = {"currency": currency, "accountInfo": _info("USD_ACCOUNT", info)}
        first = await client.post(
            "/customers/external-accounts", auth=auth, json={**body, "customerId": a["id"]}
        )
        dup = await client.post(
            "/customers/external-accounts", auth=auth, json={**body, "customerId": a["id"]}
        )
        assert dup.status_code == 409 and dup.json()["details"]["existingAccountId"] == first.json()["id"]
        assert (
            await client.post("/customers/external-accounts", auth=auth, json={**body, "customerId": b["id"]})
        ).status_code == 201
        assert (await client.post("/platform/external-accounts", auth=auth, json=body)).status_code == 201
        await client.delete(f"/customers/external-accounts/{first.json()['id']}", auth=auth)
        assert (
            await client.post("/customers/external-accounts", auth=auth, json={**body, "customerId": a["id"]})
        ).status_code == 201

    @pytest.mark.parametrize(
        ("suffix", "status"),
        [
            ("101", "MATCHED"),
            ("102", "NOT_MATCHED"),
            ("103", "PARTIAL_MATCH"),
            ("104", "PENDING"),
            ("106", "UNSUPPORTED"),
            ("107", "CHECKED_BY_RECEIVING_FI"),
        ],
    )
    async def test_sandbox_name_check_follows_the_suffix(self, client, auth, suffix, status):
        customer = await _customer(client, auth)
        info = {
            "accountType": "USD_ACCOUNT",
            "accountNumber": f"9876543{suffix}",
            "routingNumber": "011000015",
            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
        }
        body = (
            await client.post(
                "/customers/external-accounts",
                auth=auth,
                json={"customerId": customer["id"], "currency": "USD", "accountInfo": info},
            )
        ).json()
        assert body["beneficiaryVerificationStatus"] == status
        if status in ("MATCHED", "PARTIAL_MATCH"):
            assert body["beneficiaryVerifiedData"] == {"fullName": "Jane Doe"}

    async def test_sandbox_suffix_105_is_rejected_as_invalid(self, client, auth):
        customer = await _customer(client, auth)
        info = {
            "accountType": "USD_ACCOUNT",
            "accountNumber": "9876543105",
            "routingNumber": "011000015",
            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
        }
        response = await client.post(
            "/customers/external-accounts",
            auth=auth,
            json={"customerId": customer["id"], "currency": "USD", "accountInfo": info},
        )
        assert response.status_code == 400 and response.json()["code"] == "INVALID_BANK_ACCOUNT"

    async def test_pix_email_keys_carry_the_suffix_in_the_user_part(self, client, auth):
        customer = await _customer(client, auth)
        info = {
            "accountType": "BRL_ACCOUNT",
            "pixKey": "testuser.102@pix.com.br",
            "pixKeyType": "EMAIL",
            "taxId": "52998224725",
            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Ana Souza"},
        }
        body = (
            await client.post(
                "/customers/external-accounts",
                auth=auth,
                json={"customerId": customer["id"], "currency": "BRL", "accountInfo": info},
            )
        ).json()
        assert body["beneficiaryVerificationStatus"] == "NOT_MATCHED"

    async def test_bank_name_must_come_from_discoveries(self, client, auth):
        customer = await _customer(client, auth)
        currency, info = VALID["SWIFT_ACCOUNT"]
        unknown = await client.post(
            "/customers/external-accounts",
            auth=auth,
            json={
                "customerId": customer["id"],
                "currency": currency,
                "accountInfo": _info("SWIFT_ACCOUNT", {**info, "bankName": "Example Bank"}),
            },
        )
        assert unknown.status_code == 400 and "accountInfo.bankName" in [
            f["field"] for f in unknown.json()["details"]["fields"]
        ]
        discovered = (await client.get("/discoveries", auth=auth, params={"country": "JP"})).json()["data"]
        assert discovered and all(d["country"] == "JP" for d in discovered)
        ok = await client.post(
            "/customers/external-accounts",
            auth=auth,
            json={
                "customerId": customer["id"],
                "currency": currency,
                "accountInfo": _info("SWIFT_ACCOUNT", {**info, "bankName": discovered[0]["bankName"]}),
            },
        )
        assert ok.status_code == 201, ok.text

    async def test_default_uma_deposit_account_is_unique_per_customer(self, client, auth):
        customer = await _customer(client, auth)
        ids = []
        for account_number in ("111111111", "222222222"):
            info = {
                "accountType": "USD_ACCOUNT",
                "accountNumber": account_number,
                "routingNumber": "011000015",
                "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
            }
            body = (
                await client.post(
                    "/customers/external-accounts",
                    auth=auth,
                    json={
                        "customerId": customer["id"],
                        "currency": "USD",
                        "defaultUmaDepositAccount": True,
                        "accountInfo": info,
                    },
                )
            ).json()
            ids.append(body["id"])
        first = (await client.get(f"/customers/external-accounts/{ids[0]}", auth=auth)).json()
        second = (await client.get(f"/customers/external-accounts/{ids[1]}", auth=auth)).json()
        assert first["defaultUmaDepositAccount"] is False and second["defaultUmaDepositAccount"] is True
        platform_default = await client.post(
            "/platform/external-accounts",
            auth=auth,
            json={
                "currency": "USD",
                "accountInfo": {**_info("USD_ACCOUNT", VALID["USD_ACCOUNT"][1])},
                "defaultUmaDepositAccount": True,
            },
        )
        assert platform_default.status_code == 400

    async def test_list_filters_delete_and_platform_separation(self, client, auth):
        customer = await _customer(client, auth)
        currency, info = VALID["MXN_ACCOUNT"]
        created = (
            await client.post(
                "/customers/external-accounts",
                auth=auth,
                json={
                    "customerId": customer["id"],
                    "currency": currency,
                    "platformAccountId": "mine-7",
                    "accountInfo": _info("MXN_ACCOUNT", info),
                },
            )
        ).json()
        platform = (
            await client.post(
                "/platform/external-accounts",
                auth=auth,
                json={
                    "currency": "USD",
                    "platformAccountId": "fbo",
                    "accountInfo": _info("USD_ACCOUNT", VALID["USD_ACCOUNT"][1]),
                },
            )
        ).json()
        assert "customerId" not in platform
        assert (
            await client.get(
                "/customers/external-accounts", auth=auth, params={"platformAccountId": "mine-7"}
            )
        ).json()["totalCount"] == 1
        assert (
            await client.get("/customers/external-accounts", auth=auth, params={"currency": "USD"})
        ).json()["totalCount"] == 0
        assert (
            await client.get("/customers/external-accounts", auth=auth, params={"customerId": customer["id"]})
        ).json()["totalCount"] == 1
        assert (await client.get("/platform/external-accounts", auth=auth)).json()["totalCount"] == 1
        assert (
            await client.get("/platform/external-accounts", auth=auth, params={"platformAccountId": "fbo"})
        ).json()["totalCount"] == 1
        # a customer account is not reachable through the platform paths and vice versa
        assert (
            await client.get(f"/platform/external-accounts/{created['id']}", auth=auth)
        ).status_code == 404
        assert (
            await client.get(f"/customers/external-accounts/{platform['id']}", auth=auth)
        ).status_code == 404
        assert (
            await client.delete(f"/customers/external-accounts/{created['id']}", auth=auth)
        ).status_code == 204
        assert (
            await client.get(f"/customers/external-accounts/{created['id']}", auth=auth)
        ).status_code == 404
        assert (
            await client.delete(f"/customers/external-accounts/{created['id']}", auth=auth)
        ).status_code == 404

    async def test_unknown_or_deleted_customer(self, client, auth):
        body = {"currency": "USD", "accountInfo": _info("USD_ACCOUNT", VALID["USD_ACCOUNT"][1])}
        assert (
            await client.post(
                "/customers/external-accounts", auth=auth, json={**body, "customerId": "Customer:nope"}
            )
        ).status_code == 404
        customer = await _customer(client, auth)
        await client.delete(f"/customers/{customer['id']}", auth=auth)
        assert (
            await client.post(
                "/customers/external-accounts", auth=auth, json={**body, "customerId": customer["id"]}
            )
        ).status_code == 410

    @pytest.mark.parametrize("account_info", [None, "USD", [], {"accountType": "MARS_ACCOUNT"}, {}])
    async def test_malformed_account_info(self, client, auth, account_info):
        response = await client.post(
            "/platform/external-accounts", auth=auth, json={"currency": "USD", "accountInfo": account_info}
        )
        assert response.status_code == 400

    async def test_other_tenants_cannot_see_accounts(self, client, auth, db, settings):
        customer = await _customer(client, auth)
        created = (
            await client.post(
                "/customers/external-accounts",
                auth=auth,
                json={
                    "customerId": customer["id"],
                    "currency": "USD",
                    "accountInfo": _info("USD_ACCOUNT", VALID["USD_ACCOUNT"][1]),
                },
            )
        ).json()
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        assert (
            await client.get(f"/customers/external-accounts/{created['id']}", auth=other)
        ).status_code == 404
        assert (
            await client.delete(f"/customers/external-accounts/{created['id']}", auth=other)
        ).status_code == 404
        assert (await client.get("/customers/external-accounts", auth=other)).json()["totalCount"] == 0
        assert (
            await client.post(
                "/customers/external-accounts",
                auth=other,
                json={
                    "customerId": customer["id"],
                    "currency": "USD",
                    "accountInfo": _info("USD_ACCOUNT", VALID["USD_ACCOUNT"][1]),
                },
            )
        ).status_code == 404
        internal = (await client.get("/customers/internal-accounts", auth=other)).json()
        assert internal["totalCount"] == 0


class TestDiscoveries:
    async def test_filters(self, client, auth):
        everything = (await client.get("/discoveries", auth=auth)).json()["data"]
        assert len(everything) > 100 and set(everything[0]) == {
            "bankName",
            "displayName",
            "country",
            "currency",
        }
        mx = (
            await client.get("/discoveries", auth=auth, params={"country": "MX", "currency": "MXN"})
        ).json()["data"]
        assert len(mx) >= 3 and {d["currency"] for d in mx} == {"MXN"}
        assert (await client.get("/discoveries", auth=auth, params={"country": "mx"})).status_code == 400
        assert (await client.get("/discoveries", auth=auth, params={"country": "ZZ"})).json()["data"] == []


def test_derived_instructions_are_a_fresh_copy_each_time():
    """Deposit details are derived once per id and process; what a caller changes in its copy (a quote's notes)
    never reaches the next caller's."""
    first = instructions.derived_instructions("InternalAccount:copy-test", "USD")
    first[0]["instructionsNotes"] = "changed"
    first[0]["accountOrWalletInfo"]["reference"] = "changed"
    again = instructions.derived_instructions("InternalAccount:copy-test", "USD")
    assert again[0]["instructionsNotes"] != "changed"
    assert again[0]["accountOrWalletInfo"]["reference"] == instructions.deposit_reference(
        "InternalAccount:copy-test"
    )
