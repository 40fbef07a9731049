"""Contract tests of the result cache port: every test runs against the memory fake AND Azurite."""

from __future__ import annotations

import pytest

from shared.storage.ports import Storage

KEY = "ab" + "0" * 62
OTHER = "cd" + "1" * 62


async def test_a_missing_entry_is_none_and_a_put_is_read_back(storage: Storage) -> None:
    assert await storage.cache.get(KEY) is None
    await storage.cache.put(KEY, b"entry\n\x00bytes", expires_at=2e9)
    assert await storage.cache.get(KEY) == b"entry\n\x00bytes"


async def test_a_later_put_replaces_the_entry(storage: Storage) -> None:
    await storage.cache.put(KEY, b"first", expires_at=2e9)
    await storage.cache.put(KEY, b"second", expires_at=2e9)
    assert await storage.cache.get(KEY) == b"second"


async def test_expired_lists_only_entries_past_their_expiry_and_delete_is_idempotent(
    storage: Storage,
) -> None:
    await storage.cache.put(KEY, b"old", expires_at=1000.0)
    await storage.cache.put(OTHER, b"new", expires_at=3000.0)
    assert await storage.cache.expired(2000.0) == [KEY]
    await storage.cache.delete(KEY)
    await storage.cache.delete(KEY)
    assert await storage.cache.get(KEY) is None
    assert await storage.cache.get(OTHER) == b"new"


async def test_keys_that_are_not_hashes_never_name_a_blob(storage: Storage) -> None:
    with pytest.raises(ValueError, match="invalid cache key"):
        await storage.cache.get("../outputs/x")


async def test_a_bulk_purge_deletes_expired_entries_only(storage: Storage) -> None:
    from shared.ops.purge import purge_many

    await storage.cache.put(KEY, b"old", expires_at=1000.0)
    await storage.cache.put(OTHER, b"new", expires_at=3e9)
    dry = await purge_many(storage, now=2e9, older_than_s=86400, dry_run=True)
    assert dry.cache_entries_expired == 1
    assert await storage.cache.get(KEY) == b"old"
    report = await purge_many(storage, now=2e9, older_than_s=86400)
    assert report.cache_entries_expired == 1
    assert await storage.cache.get(KEY) is None
    assert await storage.cache.get(OTHER) == b"new"


async def test_an_expiry_scan_is_bounded_and_successive_starts_reach_every_entry(
    storage: Storage,
) -> None:
    # Before: one scan listed the whole container (200,005 entries in one call in the review)
    # to find a few expired ones. Now at most ``scan`` entries are listed, from a key prefix on.
    keys = [f"{p:02x}" + f"{i:062x}" for p in (0x10, 0x80, 0xF0) for i in range(3)]
    for key in keys:
        await storage.cache.put(key, b"x", expires_at=1000.0)
    assert await storage.cache.expired(2000.0, scan=4) == keys[:4]
    assert await storage.cache.expired(2000.0, start=0x80, scan=4) == keys[3:7]
    assert await storage.cache.expired(2000.0, start=0xF1, scan=2) == keys[:2]  # wraps around
    assert await storage.cache.expired(2000.0, start=0x80, limit=2) == keys[3:5]
    reached = {
        key
        for start in range(0, 256, 16)
        for key in await storage.cache.expired(2000.0, start=start, scan=3)
    }
    assert reached == set(keys)
