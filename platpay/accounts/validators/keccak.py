"""Keccak-256 as Ethereum uses it, in pure Python.

Ethereum settled on the original Keccak submission, whose padding appends the bits 0x01 ... 0x80. FIPS 202
(hashlib.sha3_256) later changed the domain-separation suffix to 0x06, so the two give different digests for
the same input: EIP-55 checksums need this one. Speed is irrelevant here (one 40-byte hash per address).
"""

from __future__ import annotations

_RATE_BYTES = 136  # 1600-bit state minus a 512-bit capacity, for 256-bit output
_MASK64 = (1 << 64) - 1


def _rotate_left(lane: int, shift: int) -> int:
    shift %= 64
    return ((lane << shift) | (lane >> (64 - shift))) & _MASK64


def _keccak_f1600(lanes: list[list[int]]) -> None:
    """The 24-round permutation on a 5x5 array of 64-bit lanes, indexed lanes[x][y]."""
    lfsr = 1
    for _ in range(24):
        # theta: mix each column's parity into its neighbours
        parity = [lanes[x][0] ^ lanes[x][1] ^ lanes[x][2] ^ lanes[x][3] ^ lanes[x][4] for x in range(5)]
        for x in range(5):
            effect = parity[(x + 4) % 5] ^ _rotate_left(parity[(x + 1) % 5], 1)
            for y in range(5):
                lanes[x][y] ^= effect
        # rho and pi: rotate each lane by a triangular number and move it along the (x, y) -> (y, 2x+3y) path
        x, y = 1, 0
        current = lanes[x][y]
        for step in range(24):
            x, y = y, (2 * x + 3 * y) % 5
            current, lanes[x][y] = lanes[x][y], _rotate_left(current, (step + 1) * (step + 2) // 2)
        # chi: the only non-linear step
        for y in range(5):
            row = [lanes[x][y] for x in range(5)]
            for x in range(5):
                lanes[x][y] = row[x] ^ ((~row[(x + 1) % 5]) & row[(x + 2) % 5])
        # iota: round constants come from a degree-8 LFSR
        for bit in range(7):
            lfsr = ((lfsr << 1) ^ ((lfsr >> 7) * 0x71)) % 256
            if lfsr & 2:
                lanes[0][0] ^= 1 << ((1 << bit) - 1)


def keccak256(data: bytes) -> bytes:
    return _sponge_256(data, domain_suffix=0x01)


def _sponge_256(data: bytes, *, domain_suffix: int) -> bytes:
    """Absorb with pad10*1 after the domain suffix (0x01 Keccak, 0x06 FIPS 202 SHA3), squeeze 32 bytes."""
    padded = bytearray(data)
    padded.append(domain_suffix)
    padded.extend(b"\x00" * (-len(padded) % _RATE_BYTES))
    padded[-1] |= 0x80
    lanes = [[0] * 5 for _ in range(5)]
    for offset in range(0, len(padded), _RATE_BYTES):
        block = padded[offset : offset + _RATE_BYTES]
        for index in range(_RATE_BYTES // 8):
            lanes[index % 5][index // 5] ^= int.from_bytes(block[8 * index : 8 * index + 8], "little")
        _keccak_f1600(lanes)
    return b"".join(lanes[index % 5][index // 5].to_bytes(8, "little") for index in range(4))
