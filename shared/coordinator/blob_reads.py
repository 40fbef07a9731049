"""Reading a blob a worker named, at the size its event claimed: never more.

A worker's event says where a large output is and how large it is. The coordinator reads such a
blob to record a cache entry or to expand a ``foreach_from`` list; the worker identity can write
any blob under the outputs container, so the blob may be larger than claimed (a 1 KiB claim, a
160 MiB blob). Reads here fetch at most the claimed size (one ranged GET) and refuse a blob whose
size is not the claimed one.
"""

from __future__ import annotations

from shared.errors import SizeMismatchError
from shared.storage.ports import OutputBlobs


async def read_as_claimed(outputs: OutputBlobs, name: str, size: int) -> bytes:
    """The bytes of ``name``, which its event said are ``size`` bytes: at most that many are
    read, and SizeMismatchError if the blob holds another number. NotFoundError if missing."""
    data, total = await outputs.read_range(name, 0, size)
    if total != size or len(data) != size:
        raise SizeMismatchError(f"blob {name!r} holds {total} bytes; its event said {size}")
    return data
