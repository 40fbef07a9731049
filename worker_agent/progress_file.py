"""The attempt's ``$DAGQ_PROGRESS`` file: JSON lines the task appends, read by the worker.

The worker creates the file before the task starts and reads it through its own descriptor (like
the log, see logfile.py): a task that replaces it with a FIFO or a link changes nothing the worker
reads. Each read takes at most ``READ_BYTES`` of new text (a task that writes more between two
reads has its older lines skipped: only the latest values matter), and a line longer than
``shared.progress.MAX_LINE_BYTES`` is dropped. The lines are folded into a ``TaskProgress``
(bounded there).
"""

from __future__ import annotations

from pathlib import Path

from shared.limits import MAX_PROGRESS_LINE_BYTES as MAX_LINE_BYTES
from shared.limits import PROGRESS_READ_BYTES as READ_BYTES
from shared.progress import TaskProgress
from worker_agent.logfile import LogFile


class ProgressFile:
    """Reads the new lines of one attempt's progress file."""

    def __init__(self, file: Path | LogFile) -> None:
        """Read ``file``: a LogFile the agent opened (it is closed with this reader), or a path
        to create it at."""
        self.file = file if isinstance(file, LogFile) else LogFile.create(file)
        self.offset = 0
        self.progress = TaskProgress()
        self._partial = b""
        self._skipping = False
        """Inside an over-long line: drop bytes up to its end."""

    def close(self) -> None:
        self.file.close()

    def read(self) -> bool:
        """Fold the lines appended since the last read; True if the progress changed."""
        size = self.file.size()
        if size <= self.offset:
            return False
        start = max(self.offset, size - READ_BYTES)
        if start > self.offset:  # skipped ahead: the first line read may be cut
            self._partial, self._skipping = b"", True
        data = self.file.pread(start, size - start)
        self.offset = start + len(data)
        changed = False
        *lines, rest = (self._partial + data).split(b"\n")
        for line in lines:
            if self._skipping:
                self._skipping = False
                continue
            changed |= self.progress.fold_line(line)
        if self._skipping or len(rest) > MAX_LINE_BYTES:
            self._partial, self._skipping = b"", True
        else:
            self._partial = rest
        return changed
