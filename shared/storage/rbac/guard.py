"""A Storage that refuses what Azure would refuse: every call checked against the deployment's
role assignments for one identity before it reaches the adapter underneath.

Azurite (and memory storage) grant every caller everything, so a role missing from infra/ would
only show on Azure, as a 403. ``guarded(storage, identity)`` puts the check in front of any
Storage: a call outside the identity's grants raises ``permission_denied``'s error, the same shape
the Azure SDK raises (``HttpResponseError``, status 403, ``AuthorizationPermissionMismatch``),
with what was refused, to whom and where. The app's components (API, coordinator, sweeps) run as
``app``, the worker agent as ``worker``. ``Settings.rbac_enforce`` turns it on (the test suite and
the local stacks do); ``Settings.rbac_usage`` also records each permission used (``make
rbac-check``: ``shared.storage.rbac.usage``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from azure.core.exceptions import HttpResponseError

from shared.names import ResourceNames
from shared.storage.ports import Queue, Queues, Storage
from shared.storage.rbac.model import (
    Decision,
    PermissionModel,
    Target,
    decide,
    deployed_model,
    narrowest,
    scopes_of,
)
from shared.storage.rbac.operations import OPERATIONS, Port, RestOperation
from shared.storage.rbac.usage import UsageLog, caller

AZURE_MESSAGE = "This request is not authorized to perform this operation using this permission."


def permission_denied(detail: str) -> HttpResponseError:
    """The error the Azure SDK raises for a call outside the caller's roles: an
    ``HttpResponseError`` with status 403 and error code ``AuthorizationPermissionMismatch``
    (the SDK's own class, not a subclass, so code handles it exactly as it would on Azure), its
    message Azure's, followed by what was refused, to whom and where."""
    error = HttpResponseError(
        message=f"{AZURE_MESSAGE}\nErrorCode:AuthorizationPermissionMismatch\n{detail}"
    )
    error.status_code = 403
    error.reason = AZURE_MESSAGE
    error.error_code = "AuthorizationPermissionMismatch"  # type: ignore[attr-defined]  # as the SDK does
    return error


@dataclass(frozen=True)
class Guard:
    """One identity's view of the model: decides each call, records what it used."""

    identity: str
    names: ResourceNames
    model: PermissionModel
    usage: UsageLog | None = None

    def check(
        self,
        port: str,
        method: str,
        operation: RestOperation,
        target: Target,
        made_by: str | None = None,
    ) -> None:
        scopes = scopes_of(self.names, target)
        decision: Decision = decide(self.model, self.identity, operation, scopes, target.blob)
        refused = None
        if not decision.allowed:
            refused = (
                f"dagq's permission model: identity {self.identity!r} may not {operation.name}"
                f" ({port}.{method}) on {target.describe(self.names)}: no role assignment in"
                f" infra/ grants {' and '.join(decision.missing)} there"
                " (infra/modules/identity.bicep; docs/permissions.md)"
            )
        if self.usage is not None:
            call, scope = f"{port}.{method}", narrowest(scopes)
            self.usage.record(
                self.identity, call, operation, scope, decision.grants, refused, made_by
            )
        if refused is not None:
            raise permission_denied(refused)


# -- where each call goes ------------------------------------------------------------------------

Locate = Callable[[str, tuple[Any, ...], dict[str, Any]], list[Target]]
"""(method, args, kwargs) -> the containers/blobs, queues or tables the call touches."""


def _first(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> str:
    return str(args[0] if args else kwargs[name])


def _workflow_blobs(container: str) -> Locate:
    def locate(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Target]:
        if method in ("purge_marks", "job_marks"):
            return [Target("blob", container)]
        if method == "mark_job":
            job = ResourceNames.job_mark_blob(_first(args, kwargs, "job"))
            return [Target("blob", container, job)]
        workflow_id = _first(args, kwargs, "workflow_id")
        state, definition = (
            ResourceNames.state_blob(workflow_id),
            ResourceNames.definition_blob(workflow_id),
        )
        blobs = {
            "create_definition": [definition],
            "read_definition": [definition],
            "write_definition": [definition],
            "definition_properties": [definition],
            "delete_definition": [definition],
            "delete": [state, definition],
            "mark_purge": [ResourceNames.purge_marker_blob(workflow_id)],
            "unmark_purge": [ResourceNames.purge_marker_blob(workflow_id)],
        }.get(method, [state])
        return [Target("blob", container, blob) for blob in blobs]

    return locate


def _named_blobs(
    container: str, argument: str, to_blob: Callable[[str], str], listings: frozenset[str]
) -> Locate:
    """Blobs named by a call's first argument; ``listings`` list the container instead."""

    def locate(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Target]:
        if method in listings:
            return [Target("blob", container)]
        return [Target("blob", container, to_blob(_first(args, kwargs, argument)))]

    return locate


def _fixed(*targets: Target) -> Locate:
    def locate(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Target]:
        return list(targets)

    return locate


class _Guarded:
    """One port behind the guard: each of its storage methods is checked, then called."""

    def __init__(self, inner: Any, port: Port, guard: Guard, locate: Locate) -> None:
        self._inner, self._port, self._guard, self._locate = inner, port, guard, locate

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._inner, attribute)
        operations = OPERATIONS[self._port].get(attribute)
        if operations is None:
            return value

        def checked(*args: Any, **kw: Any) -> Any:
            # Called where the caller awaits it (a gathered call runs later, in a task of its
            # own): the code that made the call is known here, not once the coroutine runs.
            made_by = caller() if self._guard.usage is not None else None
            return self._call(attribute, operations, value, made_by, args, kw)

        return checked

    async def _call(
        self,
        method: str,
        operations: tuple[RestOperation, ...],
        call: Any,
        made_by: str | None,
        args: tuple[Any, ...],
        kw: dict[str, Any],
    ) -> Any:
        for target in self._locate(method, args, kw):
            for operation in operations:
                self._guard.check(self._port, method, operation, target, made_by)
        return await call(*args, **kw)


class _GuardedQueues(_Guarded):
    def get(self, azure_name: str) -> Queue:
        queue = self._inner.get(azure_name)
        return cast(
            Queue, _Guarded(queue, "queue", self._guard, _fixed(Target("queue", azure_name)))
        )


@dataclass(frozen=True)
class GuardedStorage(Storage):
    """A Storage whose every call is checked for ``guard.identity`` first."""

    inner: Storage = field(kw_only=True)
    guard: Guard = field(kw_only=True)

    def for_partition(self, partition: int) -> Storage:
        return _wrap(self.inner.for_partition(partition), self.guard)


def _wrap(storage: Storage, guard: Guard) -> GuardedStorage:
    names = guard.names

    def port(inner: Any, name: Port, locate: Locate) -> Any:
        return _Guarded(inner, name, guard, locate)

    queues = _GuardedQueues(storage.queues, "queues", guard, _fixed(Target("queue", "")))
    lease = Target("blob", names.workflows_container, ResourceNames.lease_blob(storage.partition))
    outputs = _named_blobs(names.outputs_container, "name", str, frozenset({"delete_prefix"}))
    cache = _named_blobs(
        names.cache_container, "key", ResourceNames.cache_entry_blob, frozenset({"expired"})
    )
    return GuardedStorage(
        workflows=port(storage.workflows, "workflows", _workflow_blobs(names.workflows_container)),
        outputs=port(storage.outputs, "outputs", outputs),
        deadletters=port(
            storage.deadletters, "deadletters", _fixed(Target("blob", names.deadletter_container))
        ),
        lease=port(storage.lease, "lease", _fixed(lease)),
        queues=cast(Queues, queues),
        index=port(storage.index, "index", _fixed(Target("table", names.index_table))),
        event_queue=queues.get(storage.event_queue.name),
        event_poison_queue=queues.get(storage.event_poison_queue.name),
        registry=port(storage.registry, "registry", _fixed(Target("table", names.registry_table))),
        cache=port(storage.cache, "cache", cache),
        schedules=port(
            storage.schedules, "schedules", _fixed(Target("table", names.schedules_table))
        ),
        partition=storage.partition,
        inner=storage,
        guard=guard,
    )


def guarded(
    storage: Storage,
    identity: str,
    names: ResourceNames,
    *,
    model: PermissionModel | None = None,
    usage: UsageLog | None = None,
) -> GuardedStorage:
    """``storage`` as ``identity`` may use it under ``model`` (default: infra/'s model.json)."""
    return _wrap(storage, Guard(identity, names, model or deployed_model(), usage))
