"""``paused_gc()``: the cyclic garbage collector off while a large definition is compiled.

Compiling 100,000 tasks allocates millions of long-lived objects and no garbage; the collector
would rescan the growing heap again and again (``bench/bench_spec.py``: about 3x slower with it
on). The collector is process-wide, and the API and the coordinator share one process, so the
pause is kept as small as it can be: it is counted, not nested blindly (threads and nested
compiles overlap safely: the collector comes back when the *last* pause ends), it is restored on
any exception, and it never turns on a collector that someone else had turned off. Validation is
bounded (``docs/workflow-format.md``, Limits), so a pause is too.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
"""Pauses in progress (all threads)."""
_restore = False
"""Whether the collector was on when the first of them began."""


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic collector for the block; re-entrant and thread-safe."""
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restore:
                gc.enable()
