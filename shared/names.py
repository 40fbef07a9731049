"""Every Azure resource name dagq uses, computed from the deployment prefix.

This module is the only place that builds a container, table, queue or blob name; infra/ (Bicep),
the docs and the tests take names from here. A prefix namespaces a whole deployment, so several
deployments (or test runs) can share one storage account.

Azure's rules this module enforces: containers and queues are 3-63 characters of lowercase letters,
digits and single hyphens; tables are 3-63 alphanumerics starting with a letter.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from shared.deployment import check_partition, check_prefix
from shared.errors import InvalidIdError
from shared.limits import MAX_QUEUE_NAME

QUEUE_NAME_RE = re.compile(r"^[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*$")
"""A queue name as written in a definition (``gpu``, ``cpu-large``, ``A100_80GB``)."""

TASK_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.=-]{0,127}$")
"""Task names become blob path segments, message ids and URL path segments: a safe charset, no
slashes, no control characters, at most 128 characters, and never ``..`` (checked separately)."""

WORKFLOW_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""Workflow ids (generated or given with ``?id=``): they name blobs and appear in message ids."""

INDEX_PARTITION = "wf"
"""All index rows share one partition: listing is a single ordered partition scan."""

WORKER_PARTITION = "worker"
"""Registry-table partition of the worker records: one row per running worker agent."""
QUEUE_PARTITION = "queue"
"""Registry-table partition of the queues any worker ever polled: one row per queue."""
FAILURE_PARTITION = "failure"
"""Registry-table partition of tolerated storage failures (``shared.storage.tolerated``)."""
SCHEDULE_PARTITION = "schedule"
"""Schedules-table partition of the schedules: one row per schedule, its name the RowKey."""

_MAX_MS = 10**13  # inverted timestamps keep 13 digits until the year 2286
_DEADLETTER_NEWEST_FIRST = re.compile(r"\d{4}-\d{2}-\d{2}/\d{13}-.+\.json")


def queue_name_problem(queue: str) -> str | None:
    """Why ``queue`` (as written in a definition) is not a valid queue name, or None if it is."""
    if not isinstance(queue, str) or not queue:
        return "a queue name must be a non-empty string"
    if len(queue) > MAX_QUEUE_NAME:
        return f"queue name {queue!r} is longer than {MAX_QUEUE_NAME} characters"
    if not QUEUE_NAME_RE.match(queue):
        return (
            f"invalid queue name {queue!r}: use letters, digits and single '-' or '_' between them"
        )
    return None


def safe_name_problem(name: str, what: str = "task name") -> str | None:
    """Why ``name`` is not a safe task name, or None if it is."""
    if not isinstance(name, str) or not name:
        return f"a {what} must be a non-empty string"
    if not TASK_NAME_RE.match(name) or ".." in name:
        shown = name if len(name) <= 60 else name[:57] + "..."
        return (
            f"invalid {what} {shown!r}: use 1-128 of A-Z a-z 0-9 _ . = - (not starting with '.',"
            " '-' or '=', no '..', no '/', no spaces or control characters)"
        )
    return None


def workflow_id_problem(workflow_id: str) -> str | None:
    """Why ``workflow_id`` is not a valid workflow id, or None if it is."""
    if (
        not isinstance(workflow_id, str)
        or not WORKFLOW_ID_RE.match(workflow_id)
        or (".." in workflow_id)
    ):
        return (
            "invalid workflow id: use 1-64 of A-Z a-z 0-9 _ . - starting with a letter or digit,"
            " without '..'"
        )
    return None


def new_workflow_id(now: float, entropy: str) -> str:
    """A readable, time-sortable id such as ``20261129-115012-k3x9qa``.

    ``entropy`` is a few random lowercase characters supplied by the caller (the core takes no
    randomness of its own).
    """
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"{stamp}-{entropy}"


def index_row_key(workflow_id: str, created_at: float) -> str:
    """The index RowKey: an inverted creation time, so a partition scan lists newest first."""
    inverted = _MAX_MS - int(created_at * 1000)
    return f"{inverted:013d}-{workflow_id}"


@dataclass(frozen=True)
class ResourceNames:
    """The names of one deployment's resources, derived from its prefix."""

    prefix: str

    def __post_init__(self) -> None:
        check_prefix(self.prefix)

    # -- containers -------------------------------------------------------------------------
    @property
    def workflows_container(self) -> str:
        """Definition blobs (immutable) and state blobs (ETag CAS), plus the coordinator lease."""
        return f"{self.prefix}-workflows"

    @property
    def outputs_container(self) -> str:
        """Large task outputs, logs, upstream bundles and attempt claims."""
        return f"{self.prefix}-outputs"

    @property
    def deadletter_container(self) -> str:
        """Events that could not be applied, each kept with its reason."""
        return f"{self.prefix}-deadletter"

    @property
    def cache_container(self) -> str:
        """Result cache entries (``cache:`` tasks), one blob per key; removed when they expire."""
        return f"{self.prefix}-cache"

    @staticmethod
    def cache_entry_blob(key: str) -> str:
        """A cache key's entry blob (the key is a hex SHA-256, checked here: it names a blob)."""
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            raise ValueError(f"invalid cache key {key[:80]!r}")
        return f"{key[:2]}/{key}"

    @staticmethod
    def cache_prefixes(start: int = 0) -> list[str]:
        """The 256 name prefixes of entry blobs (``00/`` ... ``ff/``), from ``start`` on and
        wrapping around: the order an expiry scan walks the cache container in."""
        return [f"{(start + i) % 256:02x}/" for i in range(256)]

    @staticmethod
    def cache_key_of_blob(name: str) -> str:
        """The key of an entry blob (``cache_entry_blob``'s inverse)."""
        return name.rpartition("/")[2]

    # -- table ------------------------------------------------------------------------------
    @property
    def index_table(self) -> str:
        """One small row per workflow for listing; a projection of the state blobs."""
        return f"{self.prefix}WorkflowsIndex"

    @property
    def registry_table(self) -> str:
        """The worker registry (heartbeats, queues polled, job marks): a table of its own, so the
        workers' role (write their rows) reaches no workflow's index row."""
        return f"{self.prefix}WorkersRegistry"

    @property
    def schedules_table(self) -> str:
        """The schedules (``dagq schedule``): a table of its own, which only the app reads and
        writes (the workers' identity has no role on it)."""
        return f"{self.prefix}Schedules"

    # -- queues -----------------------------------------------------------------------------
    @property
    def event_queue(self) -> str:
        """Partition 0's event queue (the only one with the default single partition)."""
        return self.partition_event_queue(0)

    @property
    def event_poison_queue(self) -> str:
        """Partition 0's poison queue."""
        return self.partition_poison_queue(0)

    def partition_event_queue(self, partition: int) -> str:
        """Completions from workers and control events from the API for the workflows of one
        partition, consumed by that partition's coordinator. Partition 0 keeps the name of the
        single-partition design (``dagq-events``); partition p > 0 is ``dagq-events-p{p}``."""
        suffix = f"-p{partition}" if check_partition(partition) else ""
        return f"{self.prefix}-events{suffix}"

    def partition_poison_queue(self, partition: int) -> str:
        """Where the Functions host moves a partition's events after maxDequeueCount failures (its
        ``<queue>-poison`` convention)."""
        return f"{self.partition_event_queue(partition)}-poison"

    @property
    def notify_queue(self) -> str:
        """Notifications to deliver (issue 29): the coordinator enqueues one per webhook when a
        workflow ends, the ``notify`` function POSTs it (``shared.notify``). Only the app's."""
        return f"{self.prefix}-notify"

    @property
    def notify_poison_queue(self) -> str:
        """Where the Functions host moves a notification whose delivery raised maxDequeueCount
        times (storage trouble, not the endpoint's answer); partition 0's sweep dead-letters each
        with the reason (``shared.coordinator.sweeps``)."""
        return f"{self.notify_queue}-poison"

    def task_queue(self, queue: str) -> str:
        """The Azure queue for a definition's queue name (``gpu`` -> ``dagq-q-gpu``)."""
        problem = queue_name_problem(queue)
        if problem:
            raise ValueError(problem)
        return f"{self.prefix}-q-{queue.lower().replace('_', '-')}"

    def queue_kind(self, azure_name: str) -> str:
        """What an Azure queue of this deployment is for: ``events``, ``poison``, ``tasks``,
        ``notify`` or ``other`` (benchmarks count storage requests by it)."""
        if azure_name.startswith(f"{self.prefix}-events"):
            return "poison" if azure_name.endswith("-poison") else "events"
        if azure_name == self.notify_queue:
            return "notify"
        if azure_name == self.notify_poison_queue:
            return "poison"
        return "tasks" if azure_name.startswith(f"{self.prefix}-q-") else "other"

    def all_containers(self) -> tuple[str, ...]:
        return (
            self.workflows_container,
            self.outputs_container,
            self.deadletter_container,
            self.cache_container,
        )

    # -- blobs in the workflows container ---------------------------------------------------
    @staticmethod
    def definition_blob(workflow_id: str) -> str:
        return f"{workflow_id}.def"

    @staticmethod
    def state_blob(workflow_id: str) -> str:
        return f"{workflow_id}.state"

    @staticmethod
    def sweep_mark(partition: int = 0) -> str:
        """The job mark a partition's sweep writes when it ran (``job_mark_blob``; ``dagq doctor``
        reads it)."""
        return "sweep" + (f"-p{partition}" if check_partition(partition) else "")

    JOB_MARK_PREFIX = "_marks/"
    """The recurring jobs' last-run marks in the workflows container (never a workflow id: '_'),
    where only the app may write: a worker could forge a mark in the registry table."""

    @classmethod
    def job_mark_blob(cls, job: str) -> str:
        """The mark of a recurring job (``sweep``, ``sweep-p1``)."""
        if not re.fullmatch(r"[a-z0-9-]{1,64}", job):
            raise ValueError(f"invalid job name {job[:80]!r}")
        return f"{cls.JOB_MARK_PREFIX}{job}"

    PURGE_MARKER_PREFIX = "_purging/"
    """Purge markers in the workflows container start with this (never a workflow id: '_')."""

    @classmethod
    def purge_marker_blob(cls, workflow_id: str) -> str:
        """Written first and deleted last by a purge, so an interrupted purge is found again."""
        return f"{cls.PURGE_MARKER_PREFIX}{workflow_id}"

    @staticmethod
    def outputs_prefix(workflow_id: str, incarnation: int | None = None) -> str:
        """Outputs-container blobs of a workflow id: with ``incarnation``, those of that
        incarnation only (``{id}/{incarnation}/``: what a purge deletes); without, every blob of
        the id, all incarnations and the flat layout of workflows from before state version 6."""
        return f"{workflow_id}/" if incarnation is None else f"{workflow_id}/{incarnation}/"

    FLAT_SEGMENTS = 4
    """``{id}/{task}/{attempt}/{file}``: a blob of the flat layout (state version 5 and before)
    has four '/'-separated segments; one named per incarnation has five (a task name has no
    '/'), so the two layouts never mix up under one id."""

    @classmethod
    def incarnation_of_blob(cls, name: str) -> int | None:
        """The incarnation an attempt blob is named under (``attempt_prefix``), or None for a
        name of the flat layout (or no attempt blob at all)."""
        parts = name.split("/")
        if len(parts) != cls.FLAT_SEGMENTS + 1 or not parts[1].isdecimal():
            return None
        return int(parts[1])

    @staticmethod
    def lease_blob(partition: int = 0) -> str:
        """The sentinel whose lease makes one coordinator the writer of a partition (never a valid
        workflow id: it starts with '_'). Partition 0 keeps the single-partition name."""
        suffix = f"-p{partition}" if check_partition(partition) else ""
        return f"_coordinator{suffix}.lease"

    # -- blobs in the outputs container -----------------------------------------------------
    @staticmethod
    def attempt_prefix(
        workflow_id: str, task: str, attempt: int, incarnation: int | None = None
    ) -> str:
        """Where an attempt's blobs live: ``{id}/{incarnation}/{task}/{attempt}/``, so a purge
        deletes one incarnation's blobs and a late worker of a purged workflow never writes a
        name its successor under the id reads. ``incarnation`` None: the flat layout
        ``{id}/{task}/{attempt}/`` of workflows whose state predates version 6 (they keep it
        for life) and from before incarnations."""
        if incarnation is None:
            return f"{workflow_id}/{task}/{attempt}/"
        return f"{workflow_id}/{incarnation}/{task}/{attempt}/"

    @classmethod
    def output_blob(
        cls, workflow_id: str, task: str, attempt: int, incarnation: int | None = None
    ) -> str:
        """A task attempt's JSON output, when too large to travel inline."""
        return cls.attempt_prefix(workflow_id, task, attempt, incarnation) + "output.json"

    @classmethod
    def log_blob(
        cls, workflow_id: str, task: str, attempt: int, incarnation: int | None = None
    ) -> str:
        """A task attempt's combined stdout and stderr."""
        return cls.attempt_prefix(workflow_id, task, attempt, incarnation) + "log.txt"

    @classmethod
    def upstream_blob(
        cls, workflow_id: str, task: str, attempt: int, incarnation: int | None = None
    ) -> str:
        """Parent output refs of an attempt whose fan-in is too large to inline in its message."""
        return cls.attempt_prefix(workflow_id, task, attempt, incarnation) + "upstream.json"

    @classmethod
    def claim_blob(
        cls,
        workflow_id: str,
        task: str,
        attempt: int,
        incarnation: int | None = None,
        *,
        flat: bool = True,
    ) -> str:
        """Created by the first worker to run an attempt; duplicate dispatches find it taken.
        Per incarnation of the id: a purged run's late message never takes its successor's.
        ``flat``: the attempt's blobs have the flat layout (``attempt_prefix`` without an
        incarnation), where the claim's name says the incarnation (``claim-{incarnation}``)."""
        if not flat and incarnation is not None:
            return cls.attempt_prefix(workflow_id, task, attempt, incarnation) + "claim"
        suffix = "claim" if incarnation is None else f"claim-{incarnation}"
        return cls.attempt_prefix(workflow_id, task, attempt) + suffix

    @staticmethod
    def deadletter_blob(received_at: float, message_id: str) -> str:
        """``{YYYY-MM-DD}/{inverted time}-{message id}.json``: the inverted receive time (as in
        ``index_row_key``) makes a listing of a day newest first, so the most recent letters of
        a busy day are the first names listed, not a sample."""
        day = time.strftime("%Y-%m-%d", time.gmtime(received_at))
        inverted = _MAX_MS - int(received_at * 1000)
        return f"{day}/{inverted:013d}-{message_id}.json"

    @staticmethod
    def deadletter_newest_first(name: str) -> bool:
        """Whether a dead letter's name is of the newest-first kind (``deadletter_blob``); an
        older dagq named them ``{day}/{message id}.json``, in no useful order (and always
        before every newest-first name of the same day was written)."""
        return _DEADLETTER_NEWEST_FIRST.fullmatch(name) is not None

    @staticmethod
    def deadletter_named_time(name: str) -> float | None:
        """The receive time a newest-first dead letter's name states, or None."""
        if _DEADLETTER_NEWEST_FIRST.fullmatch(name) is None:
            return None
        inverted = int(name.split("/", 1)[1][:13])
        return (_MAX_MS - inverted) / 1000


def check_workflow_id(workflow_id: str) -> None:
    """Raise InvalidIdError if ``workflow_id`` cannot be a workflow id (no storage access)."""
    problem = workflow_id_problem(workflow_id)
    if problem:
        raise InvalidIdError(problem)


def check_task_name(task: str) -> None:
    """Raise InvalidIdError if ``task`` cannot be a task name (no storage access)."""
    problem = safe_name_problem(task)
    if problem:
        raise InvalidIdError(problem)
