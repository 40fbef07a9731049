"""The state codec's integer columns (``shared.codec.state``): stored as byte planes (all lowest
bytes, then all next bytes...) so that zlib sees long runs of zeros and repeats, and times stored
relative to a reference."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable

from shared.errors import CodecError

_BIG_ENDIAN = sys.byteorder == "big"


def pack(typecode: str, values: Iterable[int]) -> bytes:
    """``values`` as an ``array`` of ``typecode``, stored as byte planes."""
    column = array(typecode, values)
    if _BIG_ENDIAN:
        column.byteswap()
    raw = column.tobytes()
    width = column.itemsize
    return b"".join(raw[k::width] for k in range(width))


def unpack(typecode: str, data: bytes, n: int) -> array[int]:
    """The ``n`` values ``pack`` stored in ``data`` (CodecError if the size is wrong)."""
    column = array(typecode)
    width = column.itemsize
    if len(data) != n * width:
        raise CodecError(
            f"state blob is corrupt: a column holds {len(data)} bytes, expected {n * width}"
        )
    raw = bytearray(len(data))
    for k in range(width):
        raw[k::width] = data[k * n : (k + 1) * n]
    column.frombytes(raw)
    if _BIG_ENDIAN:
        column.byteswap()
    return column


def rel(values: list[int | None], refs: list[int]) -> list[int]:
    """Each value minus its reference, zigzag-encoded (small magnitudes -> small numbers), plus
    one; 0 stands for None. Inlined arithmetic: this runs over every task of every flush."""
    return [
        0 if v is None else ((v - r) << 1 if v >= r else ((r - v) << 1) - 1) + 1
        for v, r in zip(values, refs, strict=True)
    ]


def unrel(stored: array[int], refs: list[int]) -> list[int | None]:
    """The inverse of ``rel``."""
    return [
        None if z == 0 else (r + ((z - 1) >> 1) if z & 1 else r - (z >> 1))
        for z, r in zip(stored, refs, strict=True)
    ]


def refs(primary: list[int | None], fallback: list[int]) -> list[int]:
    """Each reference: the primary value where there is one, else the fallback."""
    return [f if p is None else p for p, f in zip(primary, fallback, strict=True)]
