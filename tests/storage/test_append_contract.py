"""Contract of the outputs container's append blobs (live logs), on the memory fake and Azurite."""

from __future__ import annotations

import pytest

from shared.errors import ConflictError, NotFoundError
from shared.storage.ports import Storage

TEXT = "text/plain; charset=utf-8"


async def test_append_grows_and_ranges_read_what_exists(storage: Storage) -> None:
    outputs = storage.outputs
    await outputs.append("wf/t/1/log.txt", b"", at=0, content_type=TEXT, create=True)
    assert await outputs.read_range("wf/t/1/log.txt", 0, 100) == (b"", 0)
    await outputs.append("wf/t/1/log.txt", b"hello ", at=0, content_type=TEXT)
    await outputs.append("wf/t/1/log.txt", b"world", at=6, content_type=TEXT)
    assert await outputs.get("wf/t/1/log.txt") == b"hello world"
    assert await outputs.read_range("wf/t/1/log.txt", 6, 100) == (b"world", 11)
    assert await outputs.read_range("wf/t/1/log.txt", 0, 5) == (b"hello", 11)
    assert await outputs.read_range("wf/t/1/log.txt", 11, 100) == (b"", 11)
    assert await outputs.read_range("wf/t/1/log.txt", 50, 100) == (b"", 11)


async def test_a_retried_append_is_harmless_and_a_wrong_position_is_refused(
    storage: Storage,
) -> None:
    outputs = storage.outputs
    await outputs.append("wf/t/2/log.txt", b"abc", at=0, content_type=TEXT, create=True)
    await outputs.append("wf/t/2/log.txt", b"def", at=3, content_type=TEXT)
    await outputs.append("wf/t/2/log.txt", b"def", at=3, content_type=TEXT)  # the retry
    assert await outputs.get("wf/t/2/log.txt") == b"abcdef"
    with pytest.raises(ConflictError):
        await outputs.append("wf/t/2/log.txt", b"x", at=1, content_type=TEXT)


async def test_create_starts_the_blob_again(storage: Storage) -> None:
    """A redelivered attempt runs again from the start: its log starts again too."""
    outputs = storage.outputs
    await outputs.append("wf/t/3/log.txt", b"first run", at=0, content_type=TEXT, create=True)
    await outputs.append("wf/t/3/log.txt", b"again", at=0, content_type=TEXT, create=True)
    assert await outputs.get("wf/t/3/log.txt") == b"again"


async def test_a_missing_blob_is_not_found(storage: Storage) -> None:
    with pytest.raises(NotFoundError):
        await storage.outputs.read_range("wf/none/1/log.txt", 0, 10)
    with pytest.raises(NotFoundError):
        await storage.outputs.append("wf/none/1/log.txt", b"x", at=0, content_type=TEXT)


async def test_a_put_blob_and_an_append_blob_replace_each_other(storage: Storage) -> None:
    """A short attempt's log is put whole; a redelivery of it appends live, and the other way."""
    outputs = storage.outputs
    await outputs.append("wf/t/4/log.txt", b"live", at=0, content_type=TEXT, create=True)
    await outputs.put("wf/t/4/log.txt", b"whole", content_type=TEXT)
    assert await outputs.get("wf/t/4/log.txt") == b"whole"
    await outputs.append("wf/t/4/log.txt", b"", at=0, content_type=TEXT, create=True)
    await outputs.append("wf/t/4/log.txt", b"again", at=0, content_type=TEXT)
    assert await outputs.read_range("wf/t/4/log.txt", 0, 100) == (b"again", 5)
