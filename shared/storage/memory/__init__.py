"""Every storage port in memory, faithful to Azure Storage's semantics, and no Azure SDK.

For fast tests of the coordinator, the API and the worker. They behave like the Azure adapters
(``tests/storage/test_contract.py`` runs the same tests against both): ETag compare-and-swap with
StaleStateError, create-only blobs, queue visibility timeouts and pop receipts (a NEW receipt on
every receive and extend; a stale receipt makes delete return False and extend return None),
delayed sends, dequeue counts, a lease that refuses a second holder, expires and can be broken,
and an index whose projections never clobber ``cancel_requested``.

Time comes from an injectable ``clock`` (seconds, like ``time.time``), so tests can move time on
instead of sleeping: pass a callable reading a variable you advance.

Nothing here is thread-safe or shared between processes; one event loop owns a ``MemoryStorage``.
One module per job: ``blobs``, ``queues``, ``index``, ``lease``, ``registry``; ``storage`` holds
the bundle (``memory_storage(prefix, clock)``).
"""

from shared.storage.memory.blobs import (
    MemoryContainer,
    MemoryDeadLetters,
    MemoryOutputBlobs,
    MemoryWorkflowBlobs,
)
from shared.storage.memory.clock import Clock
from shared.storage.memory.index import MemoryIndex
from shared.storage.memory.lease import MemoryLease
from shared.storage.memory.queues import MemoryQueue, MemoryQueues
from shared.storage.memory.registry import MemoryRegistry
from shared.storage.memory.storage import MemoryStorage, memory_storage

__all__ = [
    "Clock",
    "MemoryContainer",
    "MemoryDeadLetters",
    "MemoryIndex",
    "MemoryLease",
    "MemoryOutputBlobs",
    "MemoryQueue",
    "MemoryQueues",
    "MemoryRegistry",
    "MemoryStorage",
    "MemoryWorkflowBlobs",
    "memory_storage",
]
