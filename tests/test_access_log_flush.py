"""Access-log lines are flushed once per event-loop iteration, never left in the buffer."""

from __future__ import annotations

import asyncio
import io
import json
import types

import pytest

from platpay import logging as platpay_logging


class CountingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushes = 0
        self.flushed_lines = 0

    def flush(self) -> None:
        self.flushes += 1
        self.flushed_lines = self.getvalue().count("\n")


@pytest.fixture
def stream(monkeypatch: pytest.MonkeyPatch) -> CountingStream:
    target = CountingStream()
    # The module's own view of sys: pytest's output capture puts its own sys.stdout back before each test.
    monkeypatch.setattr(platpay_logging, "sys", types.SimpleNamespace(stdout=target))
    monkeypatch.setattr(platpay_logging._AccessLog, "enabled", True)
    monkeypatch.setattr(platpay_logging._AccessLog, "json_output", True)
    monkeypatch.setattr(platpay_logging._AccessLog, "flush_pending", None)
    return target


def _log(number: int) -> None:
    platpay_logging.log_request(f"req{number}", method="GET", path="/x", status=200)


def test_lines_of_one_loop_iteration_go_out_in_one_flush(stream: CountingStream) -> None:
    async def burst() -> None:
        for number in range(5):
            _log(number)
        assert stream.flushes == 0  # written, not yet flushed
        await asyncio.sleep(0)
        assert (stream.flushes, stream.flushed_lines) == (1, 5)
        _log(5)
        await asyncio.sleep(0)
        assert (stream.flushes, stream.flushed_lines) == (2, 6)

    asyncio.run(burst())
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["request_id"] for line in lines] == [f"req{n}" for n in range(6)]


def test_a_flush_left_pending_by_a_loop_that_ended_does_not_hold_back_later_lines(
    stream: CountingStream,
) -> None:
    ended = asyncio.new_event_loop()
    ended.close()
    platpay_logging._AccessLog.flush_pending = (stream, ended)  # its flush never ran

    async def later() -> None:
        _log(2)
        await asyncio.sleep(0)

    asyncio.run(later())
    assert (stream.flushes, stream.flushed_lines) == (1, 1)


def test_outside_an_event_loop_a_line_is_flushed_at_once(stream: CountingStream) -> None:
    _log(1)
    assert (stream.flushes, stream.flushed_lines) == (1, 1)
