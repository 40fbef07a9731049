"""Partitions: how workflows are spread over a deployment's coordinators.

A deployment has P partitions (``DAGQ_PARTITIONS``, default 1). Each partition has its own event
queue, poison queue and sentinel lease (``shared.names``), so each has one writer and one queue's
throughput, and P of them scale out. A workflow belongs to one partition for its whole life: the API
chooses it at submit from the workflow id (:func:`partition_of`) and records it in the workflow's
index row and state blob metadata, so raising P later routes only new workflows to the new
partitions and nothing in flight is misrouted. Pure: no I/O, no clock.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

MAX_PARTITIONS = 64
"""Most partitions a deployment may have (names stay well inside Azure's 63 characters)."""

PARTITION_METADATA_KEY = "partition"
"""The state blob metadata key that records a workflow's partition."""


def check_partitions(partitions: int) -> int:
    """Return ``partitions`` if it is a valid partition count, else raise ValueError."""
    if not isinstance(partitions, int) or not 1 <= partitions <= MAX_PARTITIONS:
        raise ValueError(f"invalid partition count {partitions!r}: use 1-{MAX_PARTITIONS}")
    return partitions


def check_partition(partition: int) -> int:
    """Return ``partition`` if it is a valid partition number, else raise ValueError."""
    if not isinstance(partition, int) or not 0 <= partition < MAX_PARTITIONS:
        raise ValueError(f"invalid partition {partition!r}: use 0-{MAX_PARTITIONS - 1}")
    return partition


def partition_of(workflow_id: str, partitions: int) -> int:
    """The partition a new workflow joins: a stable hash of its id modulo ``partitions`` (CRC-32,
    the same in every process and Python version, unlike ``hash``)."""
    check_partitions(partitions)
    return zlib.crc32(workflow_id.encode("utf-8")) % partitions


def partition_metadata(partition: int) -> dict[str, str]:
    """The state blob metadata entry that records ``partition``."""
    return {PARTITION_METADATA_KEY: str(check_partition(partition))}


def partition_from_metadata(metadata: Mapping[str, str]) -> int:
    """The partition recorded in a state blob's metadata (0 for workflows created before
    partitions existed, or when the entry is unreadable: partition 0 is where they ran)."""
    value = metadata.get(PARTITION_METADATA_KEY, "0")
    try:
        return check_partition(int(value))
    except ValueError:
        return 0
