"""The deployment's permission model: which identity holds which role where, and the decision
whether one storage operation on one resource is allowed, as Azure RBAC would decide it.

The model is derived from infra/ (``tests/infra/permission_model.py`` evaluates the Bicep
templates offline) and checked in beside this module as ``model.json``; a test keeps the two
equal, so a role changed in infra/ changes what the local stack and the tests may do.

Scopes are named as infra/README.md's "Roles" table names them (``storage account``,
``container {prefix}-outputs``, ``table {prefix}WorkersRegistry``, ``each task queue
{prefix}-q-*``, ``each event queue {prefix}-events*``); a resource lies in the scopes
``scopes_of`` returns. The only ABAC condition dagq's templates use, "this action only on blobs
whose path is like P", is understood; any other condition is refused when the model is loaded.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from shared.names import ResourceNames
from shared.storage.rbac.operations import RestOperation, Service
from shared.storage.rbac.roles import ROLE_BY_NAME, Role

MODEL_FILE = Path(__file__).with_name("model.json")

IDENTITIES = ("app", "worker", "user")
"""The identities dagq's templates create or name: the Function App's (API, coordinator, sweeps),
the workers' (VM Scale Set, AKS pods, KEDA) and the deploying user's (optional)."""

ACCOUNT = "storage account"

_PATH_CONDITION = re.compile(
    r"^\(\(!\(ActionMatches\{'(?P<action>[^']+)'\}\)\) OR "
    r"\(@Resource\[Microsoft\.Storage/storageAccounts/blobServices/containers/blobs:path\] "
    r"StringLike '(?P<glob>[^']+)'\)\)$"
)


class Grant(BaseModel):
    """One role assignment: who, which built-in role, at which scope, under which condition."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    identity: str
    role: str
    scope: str
    resource: str
    """The Bicep symbol of the assignment (infra/modules/identity.bicep), for error messages."""
    condition: str | None = None
    used_by: str | None = None
    """Who uses this grant when it is not dagq's own storage calls (the Functions host, KEDA,
    telemetry), and why; None: dagq's code, which ``make rbac-check`` must show using it."""

    @property
    def built_in(self) -> Role:
        return ROLE_BY_NAME[self.role]

    def allows(self, permission: str, blob: str | None) -> bool:
        """Whether this grant gives ``permission`` on a blob named ``blob`` (None: no blob path,
        such as List Blobs) within its scope."""
        if not self.built_in.grants(permission):
            return False
        if self.condition is None:
            return True
        match = _PATH_CONDITION.match(self.condition)
        assert match is not None  # checked when the model was built
        if not fnmatch.fnmatchcase(permission, match["action"]):
            return True
        return blob is not None and fnmatch.fnmatchcase(blob, match["glob"])


class PermissionModel(BaseModel):
    """Every role assignment of one deployment's templates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    grants: tuple[Grant, ...]

    def model_post_init(self, context: object, /) -> None:
        for grant in self.grants:
            if grant.identity not in IDENTITIES:
                raise ValueError(f"{grant.resource}: unknown identity {grant.identity!r}")
            if grant.role not in ROLE_BY_NAME:
                raise ValueError(f"{grant.resource}: {grant.role!r} is not a known built-in role")
            if grant.condition is not None and not _PATH_CONDITION.match(grant.condition):
                raise ValueError(f"{grant.resource}: condition not understood: {grant.condition}")

    def of(self, identity: str) -> tuple[Grant, ...]:
        return tuple(grant for grant in self.grants if grant.identity == identity)

    def without(self, resource: str) -> PermissionModel:
        """This model less the assignment ``resource`` (what-if checks)."""
        return PermissionModel(grants=tuple(g for g in self.grants if g.resource != resource))


@dataclass(frozen=True)
class Target:
    """What one storage operation touches: a container (and blob), a queue or a table."""

    service: Service
    name: str
    """The container, queue or table name; "" for an account-wide operation (List Queues)."""
    blob: str | None = None

    def describe(self, names: ResourceNames) -> str:
        if not self.name:
            return f"the {self.service} service of the account"
        kind = {"blob": "container", "queue": "queue", "table": "table"}[self.service]
        where = f"{kind} {self.name}"
        return f"{where}, blob {self.blob!r}" if self.blob is not None else where


def scopes_of(names: ResourceNames, target: Target) -> frozenset[str]:
    """The scope names (as in the model) that contain ``target``."""
    if not target.name:
        return frozenset({ACCOUNT})
    generic = target.name.replace(names.prefix, "{prefix}", 1)
    if target.service == "blob":
        return frozenset({ACCOUNT, f"container {generic}"})
    if target.service == "table":
        return frozenset({ACCOUNT, f"table {generic}"})
    kind = names.queue_kind(target.name)
    looped = {
        "tasks": "each task queue {prefix}-q-*",
        "events": "each event queue {prefix}-events*",
    }.get(kind)
    return frozenset({ACCOUNT, f"queue {generic}"} | ({looped} if looped else set()))


def narrowest(scopes: frozenset[str]) -> str:
    """The scope that names a resource best: a looped set, else the resource, else the account."""
    for scope in sorted(scopes):
        if scope.startswith("each "):
            return scope
    return min(scopes - {ACCOUNT}, default=ACCOUNT)


@dataclass(frozen=True)
class Decision:
    """Whether an operation is allowed and, if it is, the grants that allowed it."""

    allowed: bool
    grants: tuple[Grant, ...] = ()
    missing: tuple[str, ...] = ()
    """When refused: the permissions of the cheapest alternative that no grant gives."""


def decide(
    model: PermissionModel,
    identity: str,
    operation: RestOperation,
    scopes: frozenset[str],
    blob: str | None,
) -> Decision:
    """Azure's decision on ``operation`` by ``identity`` on a resource in ``scopes``."""
    mine = [grant for grant in model.of(identity) if grant.scope in scopes]
    best_missing: tuple[str, ...] | None = None
    for alternative in operation.need:
        used: list[Grant] = []
        missing: list[str] = []
        for permission in alternative:
            grant = next((g for g in mine if g.allows(permission, blob)), None)
            if grant is None:
                missing.append(permission)
            else:
                used.append(grant)
        if not missing:
            return Decision(True, tuple(dict.fromkeys(used)))
        if best_missing is None or len(missing) < len(best_missing):
            best_missing = tuple(missing)
    return Decision(False, missing=best_missing or ())


@functools.cache
def deployed_model() -> PermissionModel:
    """The model of infra/ as checked in (``model.json``)."""
    return PermissionModel.model_validate(json.loads(MODEL_FILE.read_text()))
