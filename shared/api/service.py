"""The API's operations that change things: submit, cancel, retry.

No HTTP here: each function takes a ``Storage`` bundle (Azure, or the in-memory fake in tests) and
returns a small result record; errors are dagq's (``NotFoundError``, ``ConflictError``...) and
carry their HTTP status. The read operations, which answer views, are in ``shared.api.reads``.

The API writes a state blob only when it creates a workflow (one writer: docs/storage.md,
"Consistency model"). Afterwards it reads states and talks to the coordinator through control
events and the index's cancel flag.
"""

from __future__ import annotations

import dataclasses
import secrets
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from shared.deployment import partition_from_metadata, partition_metadata, partition_of
from shared.errors import ConflictError, IncompleteSubmitError, NotFoundError
from shared.limits import MAX_COUNTER
from shared.messages import ActivateEvent, CancelEvent, RetryEvent, SignedMessage, encode
from shared.names import check_workflow_id, new_workflow_id
from shared.readback.workflow_reads import read_workflow
from shared.signing import Signer
from shared.states import WorkflowStatus

M = TypeVar("M", bound=SignedMessage)

if TYPE_CHECKING:
    from shared.definition.workflow import CompiledWorkflow
    from shared.engine.state import RuntimeState
    from shared.names import ResourceNames
    from shared.storage.ports import IndexRow, Storage

_ID_ALPHABET = string.ascii_lowercase + string.digits


@dataclass(frozen=True)
class Submission:
    """What submit did: ``created`` is False when an identical workflow already had this id."""

    workflow_id: str
    status: WorkflowStatus
    created: bool


@dataclass(frozen=True)
class ControlResult:
    """What cancel or retry did: the workflow's status as read, and whether an event was sent."""

    workflow_id: str
    status: WorkflowStatus
    sent: bool
    run: int


# -- submit --------------------------------------------------------------------------------------


def generate_id(now: float) -> str:
    """A fresh, time-sortable workflow id."""
    entropy = "".join(secrets.choice(_ID_ALPHABET) for _ in range(6))
    return new_workflow_id(now, entropy)


def new_incarnation() -> int:
    """A fresh incarnation for a workflow being created (``RuntimeState.incarnation``): random,
    so a purged id submitted again is told apart from every earlier workflow of that id."""
    return 1 + secrets.randbelow(MAX_COUNTER)


def same_definition(a: CompiledWorkflow, b: CompiledWorkflow) -> bool:
    """Whether two compiled workflows run the same DAG (the submitted text may differ in layout)."""
    return dataclasses.replace(a, source=None) == dataclasses.replace(b, source=None)


def compile_definition(
    text: str,
    fmt: Literal["json", "yaml"] | None = None,
    *,
    max_expansion_width: int | None = None,
    no_cache: bool = False,
    refresh: tuple[str, ...] = (),
    params: Mapping[str, str] | None = None,
    notify: Sequence[str] | None = None,
) -> tuple[CompiledWorkflow, bytes]:
    """Validate a submitted definition and encode its definition blob (CPU-bound: the HTTP shell
    runs it in a thread), with the submit's result caching overrides (``no_cache``: none for this
    run; ``refresh``: these tasks recompute and replace their entries), parameter values
    (``params``, as text: each read as its declared type) and webhooks (``notify``: URLs added
    to ``notify:``). Raises DefinitionError listing every problem."""
    from shared.codec.definition import encode_definition
    from shared.definition.compiler import compile_text
    from shared.definition.passes.cache import with_cache_overrides
    from shared.limits import MAX_EXPANSIONS

    width = MAX_EXPANSIONS if max_expansion_width is None else max_expansion_width
    wf = compile_text(
        text, source="request body", fmt=fmt, max_expansion_width=width, params=params
    )
    wf = with_cache_overrides(wf, no_cache=no_cache, refresh=refresh, source="request body")
    wf = _with_notify(wf, notify)
    return wf, encode_definition(wf)


def _with_notify(wf: CompiledWorkflow, notify: Sequence[str] | None) -> CompiledWorkflow:
    """``wf`` with a submit's ``notify`` URLs (issue 29: ``--notify URL``, ``?notify=URL``)."""
    if not notify:
        return wf
    from shared.definition.passes.notify import with_notify

    return with_notify(wf, notify, source="request body")


async def submit(
    storage: Storage,
    wf: CompiledWorkflow,
    *,
    now: float,
    workflow_id: str | None = None,
    encoded: bytes | None = None,
    partitions: int = 1,
    incarnation: int | None = None,
    signer: Signer | None = None,
    params: Mapping[str, str] | None = None,
    notify: Sequence[str] | None = None,
    names: ResourceNames | None = None,
) -> Submission:
    """Create a workflow from a validated definition, idempotently.

    Write order: definition blob (create-only, as the new incarnation's), state blob
    (create-only), index row, activate event; a definition found there (another incarnation's) is
    written again as the state's once it exists. Every step tolerates "already exists", so
    re-submitting the same id repairs a submit that crashed half-way. Same id with a different
    definition: ConflictError. ``encoded`` is the definition blob when the caller already has it
    (``compile_definition``). The workflow joins one of ``partitions`` partitions, recorded in its
    state metadata and index row, and its activate event goes to that partition's event queue.
    ``incarnation``: the new state's (default: ``new_incarnation()``; the simulation passes its
    seeded one). ``params``:
    parameter values as text (a schedule's); when given, ``wf`` is compiled again from its source
    with them (``compile_definition(params=...)`` does this in one step) and ``encoded`` ignored.
    ``notify``: webhook URLs added to the definition's ``notify:`` (already added when
    ``compile_definition`` had them; stored in the definition blob, so a repeated submit compares
    them too).

    ``names``: the deployment's resource names. Given, a workflow this call creates whose roots
    are plain (``root_dispatch.plain_roots``) has its roots dispatched by the submit itself:
    their task messages are sent FIRST, then the state blob is created already running with them
    queued, and no activate event is sent (issue 32). A send that fails raises before the state
    is written (IncompleteSubmitError; the messages sent are orphans, which workers drop).
    """
    from shared.codec.definition import decode_definition, encode_definition

    if params is not None:
        wf, encoded = with_params(wf, params), None
    if notify:
        with_urls = _with_notify(wf, notify)
        if with_urls != wf:
            wf, encoded = with_urls, None
    data = encode_definition(wf) if encoded is None else encoded
    # Chosen first: the definition blob is written as this incarnation's (a purge of another one
    # leaves it alone: issue 30, simulation seeds 2136 and 5168).
    incarnation = new_incarnation() if incarnation is None else incarnation
    if workflow_id is not None:
        check_workflow_id(workflow_id)
        created = await storage.workflows.create_definition(workflow_id, data, incarnation)
        if not created:
            existing = await storage.workflows.read_definition(workflow_id)
            if existing != data and not same_definition(decode_definition(existing), wf):
                raise ConflictError(
                    f"workflow {workflow_id!r} already exists with a different definition:"
                    " choose another id, or omit ?id= to get a generated one"
                )
    else:
        # A generated id colliding is next to impossible; a fresh one settles it anyway.
        for _ in range(5):
            workflow_id = generate_id(now)
            created = await storage.workflows.create_definition(workflow_id, data, incarnation)
            if created:
                break
        else:  # pragma: no cover - five collisions of 36**6 random ids
            raise ConflictError("could not generate a unique workflow id; submit again")
    try:
        partition = partition_of(workflow_id, partitions)
        state, partition = await _create_state(
            storage, wf, workflow_id, now, partition, incarnation,
            names if created else None, signer,  # a repeated submit (not created) activates
            data,  # carried by the state when small (version 9): the coordinator reads no blob
        )  # fmt: skip
        if created != (state.incarnation == incarnation) or (
            not created and await _definition_is_not_the_states(storage, workflow_id, state)
        ):
            # The definition is another incarnation's (found, or the state is; or a repeat finds
            # the one its first try could not make its own: simulation seed 3402): make it this
            # state's, so that a purge of the other one (If-Match on its ETag) leaves it, or
            # writes it again if that purge deleted it already, and a purge of this one deletes
            # it. Same content: checked above.
            await storage.workflows.write_definition(workflow_id, data, state.incarnation)
        if state.incarnation == incarnation:  # created now: nothing can have purged it yet
            from shared.api.index_rows import create_row

            # in one batch with the rows of this process's concurrent submits (issue 32)
            await create_row(storage.index, _index_row(wf, state, partition))
        else:  # a repeated submit found the workflow: it may be purged by now
            await _repair_row(storage, wf, state, partition)
        if state.status is WorkflowStatus.PENDING:
            events = storage.for_partition(partition).event_queue
            await events.send(encode(_signed(ActivateEvent(workflow_id=workflow_id), signer)))
    except Exception as exc:
        raise IncompleteSubmitError(workflow_id, exc) from exc
    return Submission(workflow_id=workflow_id, status=state.status, created=created)


async def _definition_is_not_the_states(
    storage: Storage, workflow_id: str, state: RuntimeState
) -> bool:
    """Whether a repeated submit found the definition written for another incarnation than its
    workflow's state (one HEAD, on the repeat path only; a definition gone meanwhile is not)."""
    if state.incarnation is None:
        return False
    try:
        written_for, _ = await storage.workflows.definition_properties(workflow_id)
    except NotFoundError:
        return False
    return written_for is not None and written_for != state.incarnation


def with_params(wf: CompiledWorkflow, params: Mapping[str, str]) -> CompiledWorkflow:
    """``wf`` compiled again from its source with these parameter values (given as text).
    Raises DefinitionError (a value of the wrong type, a name not declared...), or ValueError
    when ``wf`` kept no source."""
    from shared.definition.compiler import compile_text
    from shared.limits import MAX_EXPANSIONS

    if wf.source is None:
        raise ValueError("submit(params=...) needs a workflow compiled with its source text")
    widths = [t.expand.max_width for t in wf.tasks if t.expand is not None]
    kept = {t.name: t.cache for t in wf.tasks}
    width = widths[0] if widths else MAX_EXPANSIONS
    again = compile_text(wf.source, source="request body", params=params, max_expansion_width=width)
    if all(kept.get(t.name) == t.cache for t in again.tasks):
        return again
    # The caller applied result caching overrides (no_cache, refresh): keep them.
    tasks = tuple(dataclasses.replace(t, cache=kept.get(t.name, t.cache)) for t in again.tasks)
    return dataclasses.replace(again, tasks=tasks)


async def _create_state(
    storage: Storage,
    wf: CompiledWorkflow,
    workflow_id: str,
    now: float,
    partition: int,
    incarnation: int,
    names: ResourceNames | None = None,
    signer: Signer | None = None,
    definition: bytes | None = None,
) -> tuple[RuntimeState, int]:
    """Create the initial state blob in ``partition``, or return the existing one and the
    partition it recorded (a repeated submit, perhaps after the partition count changed). With
    ``names``, plain roots are dispatched first and the state created running with them queued
    (``_dispatch_roots``); else it is created pending, for the coordinator to activate."""
    from shared.codec.state import decode_state, encode_state, state_metadata
    from shared.engine import new_state

    state = None
    if names is not None:
        state = await _dispatch_roots(
            storage, names, wf, workflow_id, now, partition, incarnation, signer, definition
        )
    if state is None:
        state = new_state(wf, workflow_id, now, incarnation, definition)
    metadata = state_metadata(state) | partition_metadata(partition)
    try:
        await storage.workflows.create_state(workflow_id, encode_state(state), metadata)
    except ConflictError:
        stored = await storage.workflows.read_state(workflow_id)
        return decode_state(stored.data, wf), partition_from_metadata(stored.metadata)
    return state, partition


async def _dispatch_roots(
    storage: Storage,
    names: ResourceNames,
    wf: CompiledWorkflow,
    workflow_id: str,
    now: float,
    partition: int,
    incarnation: int,
    signer: Signer | None,
    definition: bytes | None,
) -> RuntimeState | None:
    """Send the roots' task messages of a workflow being created and return its state activated
    with them queued; None (nothing sent) when the coordinator must activate it."""
    from shared.api.root_dispatch import activated, send_roots

    prepared = activated(wf, workflow_id, now, incarnation, partition, signer, definition)
    if prepared is None:
        return None
    state, messages = prepared
    await send_roots(storage, names, messages)
    return state


async def _partition(storage: Storage, workflow_id: str) -> int:
    """The partition a workflow was given at submit (from its state blob's metadata)."""
    return partition_from_metadata(await storage.workflows.state_metadata(workflow_id))


async def _repair_row(
    storage: Storage, wf: CompiledWorkflow, state: RuntimeState, partition: int
) -> None:
    """Write the index row of ``state`` read earlier (a missing row: its submit crashed before
    writing it; or a repeated submit's), then make sure the state blob is still that workflow: if
    it was purged meanwhile (perhaps its id submitted again), the row is deleted again and
    NotFoundError raised. A purge deletes the row after the state blob, so a row written before
    this check is the purge's to delete."""
    from shared.codec.metadata import incarnation_from_metadata

    workflow_id = state.workflow_id
    await storage.index.create(_index_row(wf, state, partition))
    try:
        current = await storage.workflows.state_metadata(workflow_id)
    except NotFoundError:
        current = None
    if current is None or incarnation_from_metadata(current) != state.incarnation:
        await storage.index.delete(workflow_id, state.created_at)
        raise NotFoundError(
            f"workflow {workflow_id!r} was purged meanwhile (its id may hold a new workflow now)"
        )


def _index_row(wf: CompiledWorkflow, state: RuntimeState, partition: int) -> IndexRow:
    from shared.engine.projection import index_row

    return dataclasses.replace(index_row(wf, state), partition=partition)


# -- control -------------------------------------------------------------------------------------


def _signed(event: M, signer: Signer | None) -> M:
    """A control event signed with the app's key (``shared.signing``), when it has one."""
    return signer.sign(event) if signer is not None else event


async def cancel(
    storage: Storage, workflow_id: str, *, reason: str | None = None, signer: Signer | None = None
) -> ControlResult:
    """Set the durable cancel flag, then send the cancel event. Idempotent; a finished workflow is
    left as it is."""
    wf, state = await read_workflow(storage, workflow_id)
    if state.status.is_terminal:
        return ControlResult(workflow_id, state.status, sent=False, run=state.run)
    partition = await _partition(storage, workflow_id)
    try:
        await storage.index.request_cancel(workflow_id, state.created_at)
    except NotFoundError:
        # The submit crashed before its index row: write it now, the flag needs a row.
        await _repair_row(storage, wf, state, partition)
        await storage.index.request_cancel(workflow_id, state.created_at)
    events = storage.for_partition(partition).event_queue
    cancel_event = CancelEvent(
        workflow_id=workflow_id, reason=reason, incarnation=state.incarnation
    )
    await events.send(encode(_signed(cancel_event, signer)))
    return ControlResult(workflow_id, state.status, sent=True, run=state.run)


async def retry(
    storage: Storage, workflow_id: str, *, signer: Signer | None = None
) -> ControlResult:
    """Rerun a failed or cancelled workflow from its failures. ConflictError otherwise."""
    wf, state = await read_workflow(storage, workflow_id)
    if not state.status.is_terminal:
        raise ConflictError(
            f"workflow {workflow_id!r} is {state.status}: it can be rerun once it has failed or"
            " been cancelled (cancel it first to rerun it now)"
        )
    if state.status is WorkflowStatus.COMPLETED:
        raise ConflictError(f"workflow {workflow_id!r} completed: there is nothing to rerun")
    partition = await _partition(storage, workflow_id)
    try:
        await storage.index.clear_cancel(workflow_id, state.created_at)
    except NotFoundError:
        await _repair_row(storage, wf, state, partition)
        await storage.index.clear_cancel(workflow_id, state.created_at)
    events = storage.for_partition(partition).event_queue
    retry_event = RetryEvent(workflow_id=workflow_id, run=state.run, incarnation=state.incarnation)
    await events.send(encode(_signed(retry_event, signer)))
    return ControlResult(workflow_id, state.status, sent=True, run=state.run)
