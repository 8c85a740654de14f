"""`running_loop()` (platpay.loops): the running loop as asyncio gives it, kept in the task's context
after one lookup, and looked up again wherever that could be another loop."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading

import pytest

from platpay import loops


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.AbstractEventLoop]:
    """Each loop `running_loop` asked asyncio for."""
    asked: list[asyncio.AbstractEventLoop] = []
    real = asyncio.get_running_loop

    def get_running_loop() -> asyncio.AbstractEventLoop:
        asked.append(real())
        return asked[-1]

    monkeypatch.setattr(loops.asyncio, "get_running_loop", get_running_loop)
    return asked


def test_a_task_looks_its_loop_up_once(lookups: list[asyncio.AbstractEventLoop]) -> None:
    async def main() -> list[asyncio.AbstractEventLoop]:
        return [loops.running_loop() for _ in range(5)]

    with asyncio.Runner() as runner:
        got = runner.run(main())
        assert got == [runner.get_loop()] * 5
    assert lookups == [got[0]]


def test_outside_a_loop_it_raises_as_asyncio_does() -> None:
    with pytest.raises(RuntimeError):
        loops.running_loop()


def test_another_loop_on_the_same_context_is_looked_up(lookups: list[asyncio.AbstractEventLoop]) -> None:
    shared = contextvars.copy_context()  # (as a test runner that carries one context across loops)

    async def main() -> asyncio.AbstractEventLoop:
        return loops.running_loop()

    with asyncio.Runner() as first_runner:
        first = first_runner.run(main(), context=shared)
    with asyncio.Runner() as second_runner:
        second = second_runner.run(main(), context=shared)
        assert second is second_runner.get_loop()
    assert first is not second
    assert lookups == [first, second]


def test_a_thread_with_a_copy_of_the_context_gets_its_own_loop() -> None:
    async def main() -> tuple[asyncio.AbstractEventLoop, asyncio.AbstractEventLoop | None]:
        mine = loops.running_loop()
        copied = contextvars.copy_context()  # holds `mine`, as a thread pool's copy would
        theirs: list[asyncio.AbstractEventLoop] = []

        async def elsewhere() -> None:
            theirs.append(loops.running_loop())

        def thread() -> None:
            copied.run(asyncio.run, elsewhere())

        worker = threading.Thread(target=thread)
        worker.start()
        await asyncio.to_thread(worker.join)
        return mine, theirs[0] if theirs else None

    mine, theirs = asyncio.run(main())
    assert theirs is not None and theirs is not mine


def test_a_forked_child_is_not_running_its_parents_loop() -> None:
    async def main() -> bytes:
        loops.running_loop()  # kept in this task's context
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child: the loop's memory came with it, the loop did not)
            try:
                loops.running_loop()
                os.write(write_end, b"found a loop")
            except RuntimeError:
                os.write(write_end, b"no loop")
            finally:
                os._exit(0)
        os.close(write_end)
        answer = await asyncio.to_thread(os.read, read_end, 100)
        os.close(read_end)
        os.waitpid(pid, 0)
        return answer

    assert asyncio.run(main()) == b"no loop"
