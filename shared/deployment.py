"""A deployment's shape — its prefix and its partitions — parsed once for every reader.

The Functions app reads ``DAGQ_PREFIX`` and ``DAGQ_PARTITIONS`` at import time (one queue trigger
per partition) and ``Settings`` reads them for everything else: both parse them here
(:func:`shape_from_env`, :func:`parse_partitions`, :func:`check_prefix`), so they can never
disagree on a value.

A deployment has P partitions (``DAGQ_PARTITIONS``, default 1). Each partition has its own event
queue, poison queue and sentinel lease (``shared.names``), so each has one writer and one queue's
throughput, and P of them scale out. A workflow belongs to one partition for its whole life: the API
chooses it at submit from the workflow id (:func:`partition_of`) and records it in the workflow's
index row and state blob metadata, so raising P later routes only new workflows to the new
partitions and nothing in flight is misrouted. Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from shared.limits import MAX_PARTITIONS

PARTITION_METADATA_KEY = "partition"
"""The state blob metadata key that records a workflow's partition."""

DEFAULT_PREFIX = "dagq"
"""The prefix of a deployment that sets none (``DAGQ_PREFIX``)."""

DEFAULT_PARTITIONS = 1
"""The partitions of a deployment that sets none (``DAGQ_PARTITIONS``)."""

PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{1,19}$")
"""A prefix: 2-20 lowercase letters/digits starting with a letter (it must also be a valid table
name start, which rules out hyphens)."""


@dataclass(frozen=True)
class DeploymentShape:
    """What names a deployment's resources and how many coordinators it has."""

    prefix: str
    partitions: int


def check_prefix(prefix: str) -> str:
    """Return ``prefix`` if it is valid, else raise ValueError saying what a prefix may be."""
    if not PREFIX_RE.match(prefix):
        raise ValueError(
            f"invalid prefix {prefix!r}: use 2-20 lowercase letters and digits, starting with a"
            " letter"
        )
    return prefix


def parse_partitions(value: str | int | None) -> int:
    """The partition count that ``DAGQ_PARTITIONS`` (text, or an int) says; empty means the
    default. Raises ValueError naming the setting and what it may be."""
    if isinstance(value, int):
        return check_partitions(value)
    text = (value or "").strip() or str(DEFAULT_PARTITIONS)
    try:
        return check_partitions(int(text))
    except ValueError as exc:
        raise ValueError(f"DAGQ_PARTITIONS={text!r}: {exc}") from None


def shape_from_env(env: Mapping[str, str]) -> DeploymentShape:
    """The deployment's shape from its app settings (``DAGQ_PREFIX``, ``DAGQ_PARTITIONS``)."""
    prefix = (env.get("DAGQ_PREFIX") or "").strip() or DEFAULT_PREFIX
    try:
        check_prefix(prefix)
    except ValueError as exc:
        raise ValueError(f"DAGQ_PREFIX={prefix!r}: {exc}") from None
    return DeploymentShape(prefix=prefix, partitions=parse_partitions(env.get("DAGQ_PARTITIONS")))


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
