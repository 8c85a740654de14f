"""Random bytes handed out from blocks of the operating system's (platpay.kit.entropy): every byte once, in a
block's order, a new block when one runs out, and none of a parent's unread bytes in a forked child."""

from __future__ import annotations

import os
import threading

import pytest

from platpay.kit import entropy, ids


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Each block the module reads from os.urandom, in order, starting from an empty one."""
    read: list[bytes] = []
    system = os.urandom

    def urandom(n: int) -> bytes:
        block = system(n)
        read.append(block)
        return block

    monkeypatch.setattr(entropy.os, "urandom", urandom)
    monkeypatch.setattr(entropy._Unread, "block", b"")
    monkeypatch.setattr(entropy._Unread, "at", 0)
    return read


def test_bytes_are_handed_out_in_order_each_once_a_block_at_a_time(reads: list[bytes]) -> None:
    taken = [entropy.random_bytes(n) for n in [8, 1, 12] * 400]  # 8,400 bytes: three blocks' worth
    assert [len(value) for value in taken] == [8, 1, 12] * 400
    assert [len(block) for block in reads] == [entropy.BLOCK] * 3
    # every value is the next unread slice of its block; a value that would cross a block's end starts the
    # next block instead (the rest of the old one is never handed out)
    blocks, at = iter(reads), 0
    block = next(blocks)
    for value in taken:
        if at + len(value) > len(block):
            block, at = next(blocks), 0
        assert value == block[at : at + len(value)]
        at += len(value)


def test_a_request_larger_than_a_block_gets_a_block_of_its_own(reads: list[bytes]) -> None:
    big = entropy.random_bytes(entropy.BLOCK + 10)
    assert len(big) == entropy.BLOCK + 10
    assert reads == [big]
    after = entropy.random_bytes(4)
    assert len(reads) == 2 and after == reads[1][:4]


def test_threads_never_get_the_same_bytes(reads: list[bytes]) -> None:
    got: list[bytes] = []
    lock = threading.Lock()

    def take() -> None:
        mine = [entropy.random_bytes(8) for _ in range(2000)]
        with lock:
            got.extend(mine)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8000
    assert sum(len(block) for block in reads) >= 8000 * 8
    assert len(set(got)) == len(got)  # (64 random bits each: a repeat would be the same bytes handed twice)


def test_a_forked_child_never_hands_out_its_parents_unread_bytes() -> None:
    entropy.random_bytes(1)  # a block with unread bytes in it
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.write(write_end, entropy.random_bytes(16) + ids.new_id("X").encode())
        finally:
            os._exit(0)
    os.close(write_end)
    child = b""
    while chunk := os.read(read_end, 1024):
        child += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    parent = entropy.random_bytes(16)
    assert len(child) > 16
    assert child[:16] != parent  # the same 16 bytes would mean the child read the parent's block
    assert child[16:].decode() != ids.new_id("X")
