"""Workflow ids that land in chosen partitions (``shared.deployment.partition_of``), for tests and
benchmarks that need workflows in every partition."""

from __future__ import annotations

from shared.deployment import partition_of


def ids_in_each_partition(partitions: int, per_partition: int, prefix: str) -> dict[int, list[str]]:
    """``per_partition`` workflow ids ``{prefix}{n}`` in each of ``partitions`` partitions."""
    found: dict[int, list[str]] = {p: [] for p in range(partitions)}
    n = 0
    while min(len(ids) for ids in found.values()) < per_partition:
        wid = f"{prefix}{n}"
        ids = found[partition_of(wid, partitions)]
        if len(ids) < per_partition:
            ids.append(wid)
        n += 1
    return found
