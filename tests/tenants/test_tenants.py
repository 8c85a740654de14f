"""platpay/tenants: a platform's two tenants (sandbox, production) as created, read and configured, on SQLite
and PostgreSQL. Every resource row carries its tenant's id, so what is checked here is what isolation rests
on: each tenant is its own row with its own configuration, webhook signing key and identity, reads name one
tenant and answer for that one only, a change to one tenant leaves the other (and other platforms') as they
were, and the per-request TenantContext built from the joined columns is the one `load` builds."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import aliased

from platpay.errors import InvalidInput
from platpay.kit import clock
from platpay.kit.crypto import p256
from platpay.kit.crypto.sealing import get_sealer
from platpay.kit.crypto.webhook_signing import SEAL_PURPOSE
from platpay.tenants import service
from platpay.tenants.context import PRODUCTION, SANDBOX, TenantContext
from platpay.tenants.errors import TenantNotFound
from platpay.tenants.models import TenantRow

UNKNOWN = "Tenant:019542f5-b3e7-1d02-0000-00000000dead"


async def _create(db, settings, *, name: str = "Acme", regulated: bool = False, codes=("USD", "EUR")):
    async with db.transaction() as session:
        return await service.create(
            session,
            name=name,
            is_regulated=regulated,
            uma_domain=f"{name.lower()}.example",
            currency_codes=list(codes),
            settings=settings,
        )


async def _load(db, tenant_id: str) -> TenantContext:
    async with db.read() as session:
        return await service.load(session, tenant_id=tenant_id)


class TestCreate:
    async def test_a_platform_has_a_sandbox_and_a_production_tenant_each_with_its_own_identity(
        self, db, settings
    ):
        created = await _create(db, settings, regulated=True)
        assert list(created.tenant_ids) == [SANDBOX, PRODUCTION]
        sandbox = await _load(db, created.tenant_ids[SANDBOX])
        production = await _load(db, created.tenant_ids[PRODUCTION])

        assert sandbox.id != production.id
        assert sandbox.platform_id == production.platform_id == created.platform_id
        assert (sandbox.environment, production.environment) == (SANDBOX, PRODUCTION)
        assert sandbox.is_sandbox and not production.is_sandbox
        assert sandbox.is_regulated and production.is_regulated  # a platform's, fixed at creation
        assert sandbox.config_id != production.config_id
        assert sandbox.config_id.startswith("PlatformConfig:")
        assert sandbox.webhook_public_key_pem != production.webhook_public_key_pem
        assert sandbox.uma_domain == production.uma_domain == "acme.example"
        assert sandbox.webhook_endpoint is None and production.webhook_endpoint is None
        assert sandbox.currency_codes == production.currency_codes == ["USD", "EUR"]
        assert sandbox.supported_currencies[0] == service.default_currency_entry("USD")
        assert sandbox.embedded_wallet_config is None and sandbox.fee_configs == ()
        assert sandbox.end_user_terms_required is False
        assert sandbox.clock is None  # a clock never moved: the process clock

    async def test_the_signing_key_is_stored_sealed_and_opens_to_the_published_key(self, db, settings):
        created = await _create(db, settings)
        tenant_id = created.tenant_ids[SANDBOX]
        async with db.read() as session:
            sealed = await service.sealed_webhook_key(session, tenant_id=tenant_id)
        assert "PRIVATE KEY" not in sealed
        pem = get_sealer(settings.master_key, settings.var_dir).open(sealed, purpose=SEAL_PURPOSE)
        key = p256.private_key_from_pem(pem)
        assert p256.public_key_pem(key) == (await _load(db, tenant_id)).webhook_public_key_pem


class TestLookups:
    async def test_reads_by_tenant_answer_for_that_tenant(self, db, settings):
        created = await _create(db, settings)
        sandbox_id, production_id = created.tenant_ids[SANDBOX], created.tenant_ids[PRODUCTION]
        async with db.read() as session:
            assert await service.environment_of(session, tenant_id=sandbox_id) == SANDBOX
            assert await service.environment_of(session, tenant_id=production_id) == PRODUCTION
            assert await service.is_sandbox(session, tenant_id=sandbox_id) is True
            assert await service.is_sandbox(session, tenant_id=production_id) is False
            assert await service.platform_of(session, tenant_id=production_id) == created.platform_id
            assert await service.any_platform_exists(session)
            for environment, tenant_id in created.tenant_ids.items():
                tenant = await service.load_of_platform(
                    session, platform_id=created.platform_id, environment=environment
                )
                assert tenant.id == tenant_id

    async def test_no_platform_yet(self, db):
        async with db.read() as session:
            assert not await service.any_platform_exists(session)

    async def test_an_unknown_tenant_is_not_found_everywhere(self, db, settings):
        created = await _create(db, settings)
        async with db.read() as session:
            assert await service.environment_of(session, tenant_id=UNKNOWN) is None
            assert await service.webhook_endpoint(session, tenant_id=UNKNOWN) is None
            for read in (service.load, service.is_sandbox, service.platform_of, service.sealed_webhook_key):
                with pytest.raises(TenantNotFound) as raised:
                    await read(session, tenant_id=UNKNOWN)
                assert (raised.value.status, raised.value.code) == (404, "REFERENCE_NOT_FOUND")
            with pytest.raises(TenantNotFound):
                await service.load_of_platform(
                    session, platform_id=created.platform_id, environment="staging"
                )
            with pytest.raises(TenantNotFound):
                await service.load_of_platform(session, platform_id=UNKNOWN, environment=SANDBOX)


class TestConfiguration:
    async def test_a_change_to_one_tenant_leaves_the_other_and_other_platforms_as_they_were(
        self, db, settings
    ):
        acme = await _create(db, settings, name="Acme")
        other = await _create(db, settings, name="Other")
        before = {
            tenant_id: await _load(db, tenant_id)
            for tenant_id in [acme.tenant_ids[PRODUCTION], *other.tenant_ids.values()]
        }
        sandbox = await _load(db, acme.tenant_ids[SANDBOX])
        clock.advance(timedelta(seconds=5))
        async with db.transaction() as session:
            applied = await service.apply_config(
                session,
                tenant=sandbox,
                changes={
                    "webhook_endpoint": "http://127.0.0.1:9000/hooks",
                    "supported_currencies": [
                        *sandbox.supported_currencies,
                        service.default_currency_entry("MXN"),
                    ],
                    "end_user_terms_required": True,
                },
            )
        assert applied.endpoint_changed and applied.currencies_added == ["MXN"]
        assert applied.tenant.webhook_endpoint == "http://127.0.0.1:9000/hooks"
        assert applied.tenant.updated_at > sandbox.updated_at

        now = await _load(db, sandbox.id)
        assert now.currency_codes == ["USD", "EUR", "MXN"] and now.end_user_terms_required
        async with db.read() as session:
            assert (
                await service.webhook_endpoint(session, tenant_id=sandbox.id) == "http://127.0.0.1:9000/hooks"
            )
            for tenant_id, was in before.items():
                assert await service.webhook_endpoint(session, tenant_id=tenant_id) is None
                assert await _load(db, tenant_id) == was

    async def test_the_endpoint_changes_only_for_a_new_url(self, db, settings):
        created = await _create(db, settings)
        tenant = await _load(db, created.tenant_ids[SANDBOX])
        url = "https://hooks.example/a"
        expected = [(url, True), (url, False), (None, False), ("https://hooks.example/b", True)]
        for value, changed in expected:
            async with db.transaction() as session:
                applied = await service.apply_config(
                    session, tenant=tenant, changes={"webhook_endpoint": value}
                )
            assert applied.endpoint_changed is changed, value
            tenant = applied.tenant

    async def test_fee_configs_merge_under_the_lock_and_are_looked_up_by_type_and_currency(
        self, db, settings
    ):
        created = await _create(db, settings)
        tenant = await _load(db, created.tenant_ids[PRODUCTION])
        usd = {"feeType": "TRANSFER_OUT", "sourceCurrency": "USD", "fixedFee": 50, "variableFeeBps": 30}
        eur = {**usd, "sourceCurrency": "EUR"}
        async with db.transaction() as session:
            await service.apply_config(session, tenant=tenant, changes={"fee_configs": [usd]})
        async with db.transaction() as session:
            applied = await service.apply_config(
                session, tenant=tenant, changes={"fee_configs": lambda stored: [*stored, eur]}
            )
        assert applied.tenant.fee_configs == (usd, eur)
        loaded = await _load(db, tenant.id)
        assert loaded.fee_config("TRANSFER_OUT", "EUR") == eur
        assert loaded.fee_config("TRANSFER_OUT", "MXN") is None

    async def test_an_unknown_tenant_cannot_be_configured(self, db, settings):
        created = await _create(db, settings)
        tenant = dataclasses.replace(await _load(db, created.tenant_ids[SANDBOX]), id=UNKNOWN)
        async with db.transaction() as session:
            with pytest.raises(TenantNotFound):
                await service.apply_config(session, tenant=tenant, changes={"webhook_endpoint": None})


class TestContextFromTheJoinedColumns:
    async def _joined(self, db, tenant_id: str) -> TenantContext:
        other = aliased(TenantRow)
        stmt = service.join_context(select(other.id).where(other.id == tenant_id), other.id)
        async with db.read() as session:
            row = (await session.execute(stmt)).one()
        assert row[0] == tenant_id
        return service.context_from_columns(tuple(row[1:]))

    async def test_the_request_s_context_is_the_one_load_builds_and_is_shared_until_the_tenant_changes(
        self, db, settings
    ):
        created = await _create(db, settings)
        tenant_id = created.tenant_ids[SANDBOX]
        first = await self._joined(db, tenant_id)
        assert first == await _load(db, tenant_id)  # `version` is not compared
        assert first.version is not None
        assert await self._joined(db, tenant_id) is first  # same stored values: the same shared object

        async with db.transaction() as session:
            await service.apply_config(session, tenant=first, changes={"uma_domain": "changed.example"})
        changed = await self._joined(db, tenant_id)
        assert changed is not first and changed.version != first.version
        assert changed.uma_domain == "changed.example" and first.uma_domain == "acme.example"

    async def test_each_tenant_of_a_platform_joins_to_its_own_context(self, db, settings):
        created = await _create(db, settings)
        contexts = {env: await self._joined(db, tenant_id) for env, tenant_id in created.tenant_ids.items()}
        assert {env: context.environment for env, context in contexts.items()} == {
            SANDBOX: SANDBOX,
            PRODUCTION: PRODUCTION,
        }
        assert contexts[SANDBOX].id != contexts[PRODUCTION].id


class TestPureRules:
    def test_uma_domains_are_lower_cased_and_checked(self):
        assert service.validate_uma_domain(" Pay.Acme.COM ") == "pay.acme.com"
        for bad in ("acme", "-acme.com", "acme..com", "acme.c", "ac me.com", "a" * 64 + ".com"):
            with pytest.raises(InvalidInput) as raised:
                service.validate_uma_domain(bad)
            assert raised.value.details["fields"][0]["field"] == "umaDomain"

    def test_provider_requirements_come_from_the_data_file_with_defaults_by_kind(self):
        usd = service.provider_requirements("USD")
        assert usd["customer"] == ["FULL_NAME", "BIRTH_DATE", "TAX_ID", "POSTAL_ADDRESS"]
        data = service._provider_requirements()
        assert "JPY" not in data["currencies"]
        assert service.provider_requirements("JPY") == data["defaults"]["FIAT"]
        assert service.provider_requirements("NOT_A_CURRENCY") == data["defaults"]["FIAT"]

    def test_a_default_currency_entry_allows_both_directions_up_to_the_default_maximum(self):
        entry = service.default_currency_entry("EUR")
        assert entry["currencyCode"] == "EUR" and entry["minAmount"] == 1
        assert entry["maxAmount"] == service.DEFAULT_MAX_AMOUNT
        assert set(entry["enabledTransactionTypes"]) == {"OUTGOING", "INCOMING"}
