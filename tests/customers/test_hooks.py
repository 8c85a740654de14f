"""customers.hooks: the accounts domain answers customers' creation and deletion through hook points, and a
hook point nobody answers stops the write instead of silently skipping the accounts."""

from __future__ import annotations

import pytest

from platpay.accounts import service as accounts_service
from platpay.customers import hooks
from platpay.customers import service as customers_service
from platpay.kit.hooks import HookPoint


def test_accounts_subscribes_to_both_hook_points() -> None:
    assert accounts_service.open_customer_accounts in hooks.on_created.subscribers()
    assert accounts_service.close_customer_accounts in hooks.on_deleted.subscribers()


def test_a_subscriber_is_registered_once() -> None:
    point: HookPoint[hooks.CustomerDeleted] = HookPoint(
        "test.point", required="do it", subscriber_module="tests"
    )

    async def subscriber(session: object, *, tenant_id: str, customer_id: str) -> None:
        return None

    point.subscribe(subscriber)
    point.subscribe(subscriber)
    assert point.subscribers() == (subscriber,)


def test_a_hook_point_without_subscriber_raises() -> None:
    point: HookPoint[hooks.CustomerDeleted] = HookPoint(
        "test.point", required="do it", subscriber_module="tests"
    )
    with pytest.raises(RuntimeError, match=r"test\.point has no subscriber: nothing would do it"):
        point.subscribers()


async def test_creating_customers_without_the_accounts_subscriber_fails(monkeypatch) -> None:
    monkeypatch.setattr(hooks.on_created, "_subscribers", [])
    with pytest.raises(RuntimeError, match=r"customers\.hooks\.on_created has no subscriber"):
        await customers_service.create_many(None, tenant=None, drafts=[], settings=None)  # type: ignore[arg-type]


async def test_deleting_a_customer_without_the_accounts_subscriber_fails(monkeypatch) -> None:
    monkeypatch.setattr(hooks.on_deleted, "_subscribers", [])
    with pytest.raises(RuntimeError, match=r"customers\.hooks\.on_deleted has no subscriber"):
        await customers_service.delete_customer(None, tenant_id="t", customer_id="c")  # type: ignore[arg-type]
