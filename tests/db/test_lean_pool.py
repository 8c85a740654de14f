"""The lean-read pool: first come first served, bounded, and healing after a lost or interrupted connection.

Run against real asyncpg connections to PostgreSQL (the pool exists only for it)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy import bindparam, select, text

from platpay.auth.models import ApiTokenRow
from platpay.db.lean import Lean
from platpay.db.lean_pool import LeanPool
from tests.factories import create_platform
from tests.support.databases import PG_URL

pytestmark = pytest.mark.skipif(not PG_URL, reason="the lean pool serves PostgreSQL only")


def _dsn() -> str:
    assert PG_URL is not None
    return PG_URL.replace("postgresql+asyncpg://", "postgresql://")


class _Counting:
    """Opens real connections and counts them."""

    def __init__(self) -> None:
        self.opened = 0
        self.fail_next = False

    async def __call__(self) -> asyncpg.Connection:
        if self.fail_next:
            self.fail_next = False
            raise OSError("refused (test)")
        self.opened += 1
        return await asyncpg.connect(_dsn())


@contextlib.asynccontextmanager
async def _pool(size: int) -> AsyncIterator[tuple[LeanPool, _Counting]]:
    connect = _Counting()
    pool = LeanPool(connect, size=size)
    try:
        yield pool, connect
    finally:
        await pool.close()


async def test_waiters_are_served_in_arrival_order_and_newcomers_never_overtake() -> None:
    order: list[int] = []
    async with _pool(1) as (pool, connect):
        async with pool.connection() as held:
            waiters = []
            for number in range(5):
                waiters.append(asyncio.create_task(_use(pool, number, order)))
                await asyncio.sleep(0)  # each queues before the next is created
            await held.fetchval("SELECT 1")
        # While the first waiter is being woken, a newcomer arrives: it must queue behind all five.
        late = asyncio.create_task(_use(pool, 99, order))
        await asyncio.gather(*waiters, late)
        assert order == [0, 1, 2, 3, 4, 99]
        assert connect.opened == 1  # one connection, handed from each user to the next


async def _use(pool: LeanPool, number: int, order: list[int]) -> None:
    async with pool.connection() as connection:
        order.append(number)
        assert await connection.fetchval("SELECT $1::int", number) == number


async def test_never_more_connections_than_its_size() -> None:
    active = peak = 0

    async def read() -> None:
        nonlocal active, peak
        async with pool.connection() as connection:
            active += 1
            peak = max(peak, active)
            await connection.fetchval("SELECT pg_sleep(0.01)")
            active -= 1

    async with _pool(3) as (pool, connect):
        await asyncio.gather(*(read() for _ in range(40)))
        assert peak == 3
        assert connect.opened == 3


async def test_a_server_side_error_keeps_the_connection() -> None:
    async with _pool(1) as (pool, connect):
        with pytest.raises(asyncpg.DivisionByZeroError):
            async with pool.connection() as connection:
                await connection.fetchval("SELECT 1 / 0")
        async with pool.connection() as connection:
            assert await connection.fetchval("SELECT 2") == 2
        assert connect.opened == 1


async def _terminate(connection: asyncpg.Connection) -> None:
    admin = await asyncpg.connect(_dsn())
    try:
        await admin.execute("SELECT pg_terminate_backend($1)", connection.get_server_pid())
    finally:
        await admin.close()


async def test_an_idle_connection_the_server_closed_is_never_handed_out() -> None:
    async with _pool(1) as (pool, connect):
        async with pool.connection() as connection:
            pass
        await _terminate(connection)
        await asyncio.sleep(0.1)  # the event loop reads the server's end of the connection
        assert connection.is_closed()
        values = await asyncio.gather(*(_value(pool, n) for n in range(5)))
        assert values == list(range(5))
        assert connect.opened == 2


async def test_a_connection_lost_in_use_leaves_the_pool_at_once() -> None:
    async with _pool(1) as (pool, connect):
        with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError, OSError)):
            async with pool.connection() as connection:
                statement = asyncio.create_task(connection.fetchval("SELECT pg_sleep(5)"))
                await asyncio.sleep(0.05)
                await _terminate(connection)
                await statement
        # The very next use gets a new connection, without waiting for the old one to be seen closed.
        assert await _value(pool, 3) == 3
        assert connect.opened == 2


async def test_a_waiter_handed_a_connection_the_server_closed_opens_a_new_one() -> None:
    async with _pool(1) as (pool, connect):
        async with pool.connection() as connection:
            waiting = asyncio.create_task(_value(pool, 4))
            await asyncio.sleep(0.01)
            await _terminate(connection)
            await asyncio.sleep(0.1)
        assert await waiting == 4
        assert connect.opened == 2


async def test_waiting_for_a_connection_is_bounded_by_the_timeout() -> None:
    connect = _Counting()
    pool = LeanPool(connect, size=1, timeout=0.2)
    try:
        async with pool.connection():
            with pytest.raises(TimeoutError):
                await _value(pool, 1)
        assert await _value(pool, 2) == 2  # the timed-out waiter left no trace in the queue
        assert connect.opened == 1
    finally:
        await pool.close()


async def _value(pool: LeanPool, number: int) -> int:
    async with pool.connection() as connection:
        return await connection.fetchval("SELECT $1::int", number)


async def test_a_caller_cancelled_mid_statement_frees_its_slot() -> None:
    async with _pool(1) as (pool, connect):
        started = asyncio.Event()

        async def slow() -> None:
            async with pool.connection() as connection:
                started.set()
                await connection.fetchval("SELECT pg_sleep(5)")

        task = asyncio.create_task(slow())
        await started.wait()
        waiting = asyncio.create_task(_value(pool, 7))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.wait_for(waiting, 5) == 7  # on a fresh connection: the old one was mid-statement
        assert connect.opened == 2


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    async with _pool(1) as (pool, _connect):
        async with pool.connection():
            gone = asyncio.create_task(_value(pool, 1))
            await asyncio.sleep(0)
            stays = asyncio.create_task(_value(pool, 2))
            await asyncio.sleep(0)
            gone.cancel()
            await asyncio.sleep(0)
        assert await asyncio.wait_for(stays, 5) == 2
        assert gone.cancelled()


async def test_a_failed_connect_is_reported_and_the_slot_reused() -> None:
    async with _pool(1) as (pool, connect):
        connect.fail_next = True
        with pytest.raises(OSError):
            async with pool.connection():
                pass
        assert await _value(pool, 3) == 3


async def test_closed_pool_refuses_new_uses() -> None:
    pool = LeanPool(_Counting(), size=1)
    assert await _value(pool, 1) == 1
    await pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        await _value(pool, 2)


_TOKEN = Lean(select(ApiTokenRow.id).where(ApiTokenRow.client_id == bindparam("client_id")))


async def test_database_lean_reads_survive_their_backend_being_killed(db, settings, backend) -> None:
    if backend != "postgresql":
        pytest.skip("lean reads use the pool on PostgreSQL only")
    platform = await create_platform(db, settings)
    client_id = platform["sandbox"][0]
    assert await db.fetch_first(_TOKEN, {"client_id": client_id}) is not None
    victims = [connection.get_server_pid() for connection in db._pg_lean_pool()._idle]
    assert victims
    async with db.read() as session:
        for pid in victims:
            await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    await asyncio.sleep(0.1)
    # The dead connection is never handed out: the very next read runs on a new one.
    assert await db.fetch_first(_TOKEN, {"client_id": client_id}) is not None


async def test_a_lease_renews_its_connection_in_the_same_slot_and_gives_back_the_new_one() -> None:
    async with _pool(1) as (pool, connect):
        async with pool.lease() as lease:
            first = lease.connection
            renewed = await lease.renew()
            assert renewed is lease.connection and renewed is not first and first.is_closed()
            assert await renewed.fetchval("SELECT 1") == 1
        async with pool.connection() as again:  # the one slot holds the renewed connection, idle
            assert again is renewed
        assert connect.opened == 2


async def test_a_renewal_that_cannot_connect_frees_the_slot_once() -> None:
    async with _pool(1) as (pool, connect):
        with pytest.raises(OSError):
            async with pool.lease() as lease:
                connect.fail_next = True
                await lease.renew()
        async with pool.connection() as fresh:  # the slot is free again: a new connection opens in it
            assert await fresh.fetchval("SELECT 1") == 1
        assert connect.opened == 2
        assert pool._opened == 1
