"""The framing both workflow blobs share: magic bytes, a format version byte, then zlib."""

from __future__ import annotations

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
