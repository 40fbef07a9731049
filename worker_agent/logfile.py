"""An attempt's log file, read back through the descriptor the worker opened.

The task writes its log through the stdout/stderr it inherited; the worker reads it back through
its own descriptor of the same file, never by path. A task may replace ``log.txt`` with a FIFO (an
open by path would block the slot forever) or with a symlink to ``/dev/zero`` (a read by path
would exhaust the worker's memory): neither changes what the worker reads, and every read is
bounded by the byte limit whatever the file's size.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

TRUNCATED = b"\n\n[... dagq: %d bytes of log omitted ...]\n\n"


class LogFile:
    """An open log: the task's stdout/stderr go to ``fd``; reads use ``pread`` on it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def create(cls, path: Path) -> LogFile:
        """Create (or reopen for appending) the regular file at ``path``; a symlink or FIFO there
        is refused (``OSError``), never followed or opened for a blocking read."""
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path, flags, 0o600)
        if not _is_regular(fd):
            os.close(fd)
            raise OSError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        return cls(fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> LogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def read(self, max_bytes: int) -> bytes:
        """The log's bytes, or its first and last halves around a marker when over ``max_bytes``."""
        size = self.size()
        if size <= max_bytes:
            return _pread(self.fd, size, 0)
        half = max_bytes // 2
        head = _pread(self.fd, half, 0)
        tail = _pread(self.fd, half, size - half)
        return head + TRUNCATED % (size - 2 * half) + tail

    def pread(self, offset: int, count: int) -> bytes:
        """Up to ``count`` bytes of the log at ``offset``."""
        return _pread(self.fd, count, offset)

    def tail(self, chars: int) -> str:
        """The last ``chars`` characters of the log (for a failure without stderr)."""
        size = self.size()
        start = max(0, size - chars * 4)
        data = _pread(self.fd, size - start, start)
        return data.decode("utf-8", errors="replace")[-chars:]


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _pread(fd: int, count: int, offset: int) -> bytes:
    """Up to ``count`` bytes at ``offset`` (fewer if the file shrank meanwhile)."""
    chunks = []
    while count > 0:
        chunk = os.pread(fd, min(count, 1 << 20), offset)
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)
