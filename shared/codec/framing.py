"""The framing both workflow blobs share: magic bytes, a format version byte, then zlib."""

from __future__ import annotations

import struct
import zlib

from shared.errors import CodecError

ZLIB_LEVEL = 6  # level 9 saves ~1% here for twice the time


def frame(magic: bytes, version: int, body: bytes) -> bytes:
    """``magic + version byte + zlib(body)``."""
    return magic + bytes([version]) + zlib.compress(body, ZLIB_LEVEL)


def open_blob(data: bytes, magic: bytes, version: int, what: str) -> bytes:
    """The body of a ``what`` blob framed with ``magic`` and a version up to ``version``; raises
    CodecError for a bad magic, a newer or invalid version, or corrupt zlib data."""
    if len(data) < len(magic) + 1 or data[: len(magic)] != magic:
        raise CodecError(f"{what} blob is not a dagq {what} blob (bad magic bytes)")
    found = data[len(magic)]
    if found > version:
        raise CodecError(
            f"{what} blob has format version {found}, newer than this dagq reads ({version}): "
            "upgrade dagq"
        )
    if found < 1:
        raise CodecError(f"{what} blob has invalid format version {found}")
    try:
        return zlib.decompress(data[len(magic) + 1 :])
    except zlib.error as exc:
        raise CodecError(f"{what} blob is corrupt: {exc}") from None


_LEN = struct.Struct("<I")


def sections(body: bytes, at: int, count: int) -> list[bytes]:
    """The ``count`` length-prefixed (uint32) sections of a state body from offset ``at``, which
    must end exactly at its end (CodecError otherwise)."""
    out: list[bytes] = []
    for _ in range(count):
        (size,) = _LEN.unpack_from(body, at)
        at += _LEN.size
        if at + size > len(body):
            raise CodecError("state blob is corrupt: a section runs past the end")
        out.append(body[at : at + size])
        at += size
    if at != len(body):
        raise CodecError("state blob is corrupt: trailing bytes after the last section")
    return out
