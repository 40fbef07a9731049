"""Which Azure Storage REST operations each storage port method makes, and what each needs.

One row per method of the ports in ``shared.storage.ports`` and ``shared.storage.registry``: the
REST operations the Azure adapter calls (``shared.storage.azure``), where (which container, blob,
queue or table) and the RBAC permissions Azure requires of a Microsoft Entra caller for each,
as Microsoft lists them ("Authorize access to data with Microsoft Entra ID: permissions for
Blob, Queue and Table service operations", learn.microsoft.com/rest/api/storageservices/
authorize-with-azure-active-directory). A requirement is a tuple of alternatives, each a tuple of
permissions that are needed together (Get Messages: ``process/action``, or ``read`` and
``delete``). ``tests/storage/test_rbac_operations.py`` checks that every port method has a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Service = Literal["blob", "queue", "table"]

_CONTAINERS = "Microsoft.Storage/storageAccounts/blobServices/containers"
_BLOB = f"{_CONTAINERS}/blobs"
_QUEUE = "Microsoft.Storage/storageAccounts/queueServices/queues"
_TABLE = "Microsoft.Storage/storageAccounts/tableServices/tables"

Need = tuple[tuple[str, ...], ...]
"""Alternatives of permission sets: an operation is allowed if every permission of one of them is
granted."""


def _one(*permissions: str) -> Need:
    """Alternatives of single permissions (any one of them is enough)."""
    return tuple((p,) for p in permissions)


@dataclass(frozen=True)
class RestOperation:
    """One REST operation of a storage service and the permissions it needs."""

    name: str
    service: Service
    need: Need


GET_BLOB = RestOperation("Get Blob", "blob", _one(f"{_BLOB}/read"))
GET_BLOB_PROPERTIES = RestOperation("Get Blob Properties", "blob", _one(f"{_BLOB}/read"))
PUT_BLOB = RestOperation("Put Blob", "blob", _one(f"{_BLOB}/write"))
CREATE_BLOB = RestOperation("Put Blob (new)", "blob", _one(f"{_BLOB}/write", f"{_BLOB}/add/action"))
APPEND_BLOCK = RestOperation("Append Block", "blob", _one(f"{_BLOB}/write", f"{_BLOB}/add/action"))
DELETE_BLOB = RestOperation("Delete Blob", "blob", _one(f"{_BLOB}/delete"))
LIST_BLOBS = RestOperation("List Blobs", "blob", _one(f"{_BLOB}/read"))
LEASE_BLOB = RestOperation("Lease Blob", "blob", _one(f"{_BLOB}/write"))

CREATE_CONTAINER = RestOperation(
    "Create Container",
    "blob",
    _one("Microsoft.Storage/storageAccounts/blobServices/containers/write"),
)
CREATE_TABLE = RestOperation(
    "Create Table", "table", _one("Microsoft.Storage/storageAccounts/tableServices/tables/write")
)
CREATE_QUEUE = RestOperation("Create Queue", "queue", _one(f"{_QUEUE}/write"))
LIST_QUEUES = RestOperation("List Queues", "queue", _one(f"{_QUEUE}/read"))
GET_QUEUE_METADATA = RestOperation("Get Queue Metadata", "queue", _one(f"{_QUEUE}/read"))
PUT_MESSAGE = RestOperation(
    "Put Message", "queue", _one(f"{_QUEUE}/messages/add/action", f"{_QUEUE}/messages/write")
)
GET_MESSAGES = RestOperation(
    "Get Messages",
    "queue",
    (
        (f"{_QUEUE}/messages/process/action",),
        (f"{_QUEUE}/messages/read", f"{_QUEUE}/messages/delete"),
    ),
)
PEEK_MESSAGES = RestOperation("Peek Messages", "queue", _one(f"{_QUEUE}/messages/read"))
DELETE_MESSAGE = RestOperation(
    "Delete Message",
    "queue",
    _one(f"{_QUEUE}/messages/process/action", f"{_QUEUE}/messages/delete"),
)
UPDATE_MESSAGE = RestOperation("Update Message", "queue", _one(f"{_QUEUE}/messages/write"))

QUERY_ENTITIES = RestOperation("Query Entities", "table", _one(f"{_TABLE}/entities/read"))
INSERT_ENTITY = RestOperation(
    "Insert Entity", "table", _one(f"{_TABLE}/entities/write", f"{_TABLE}/entities/add/action")
)
MERGE_ENTITY = RestOperation(
    "Merge Entity", "table", _one(f"{_TABLE}/entities/write", f"{_TABLE}/entities/update/action")
)
UPSERT_ENTITY = RestOperation(
    "Insert Or Replace Entity",
    "table",
    (
        (f"{_TABLE}/entities/write",),
        (f"{_TABLE}/entities/add/action", f"{_TABLE}/entities/update/action"),
    ),
)
UPDATE_ENTITY = RestOperation(
    "Update Entity", "table", _one(f"{_TABLE}/entities/write", f"{_TABLE}/entities/update/action")
)
DELETE_ENTITY = RestOperation("Delete Entity", "table", _one(f"{_TABLE}/entities/delete"))

Port = Literal[
    "deployment",
    "workflows",
    "outputs",
    "deadletters",
    "cache",
    "lease",
    "queue",
    "queues",
    "index",
    "registry",
    "schedules",
]

OPERATIONS: dict[Port, dict[str, tuple[RestOperation, ...]]] = {
    # ``shared.storage.factory.ensure_resources``: what Bicep creates, made sure of at start.
    "deployment": {
        "create_container": (CREATE_CONTAINER,),
        "create_table": (CREATE_TABLE,),
        "create_queue": (CREATE_QUEUE,),
        "create_sentinel": (CREATE_BLOB,),
    },
    "workflows": {
        "create_definition": (CREATE_BLOB,),
        "read_definition": (GET_BLOB,),
        "write_definition": (PUT_BLOB,),
        "definition_properties": (GET_BLOB_PROPERTIES,),
        "delete_definition": (DELETE_BLOB,),
        "create_state": (CREATE_BLOB,),
        "read_state": (GET_BLOB,),
        "write_state": (PUT_BLOB,),
        "state_metadata": (GET_BLOB_PROPERTIES,),
        "state_properties": (GET_BLOB_PROPERTIES,),
        "delete": (DELETE_BLOB,),
        "mark_purge": (PUT_BLOB,),
        "purge_marks": (LIST_BLOBS,),
        "unmark_purge": (DELETE_BLOB,),
        "mark_job": (PUT_BLOB,),
        "job_marks": (LIST_BLOBS, GET_BLOB),
    },
    "outputs": {
        "put": (PUT_BLOB,),
        "create_if_absent": (CREATE_BLOB,),
        "get": (GET_BLOB,),
        "delete_prefix": (LIST_BLOBS, DELETE_BLOB),
        "append": (APPEND_BLOCK,),
        "read_range": (GET_BLOB,),
    },
    "cache": {
        "get": (GET_BLOB,),
        "put": (PUT_BLOB,),
        "expired": (LIST_BLOBS,),
        "delete": (DELETE_BLOB,),
    },
    "deadletters": {
        "put": (PUT_BLOB,),
        "list": (LIST_BLOBS, GET_BLOB),
    },
    "lease": {
        "acquire": (LEASE_BLOB,),
        "renew": (LEASE_BLOB,),
        "release": (LEASE_BLOB,),
        "break_lease": (LEASE_BLOB,),
        "is_held": (GET_BLOB_PROPERTIES,),
    },
    "queue": {
        "ensure": (CREATE_QUEUE,),
        "send": (PUT_MESSAGE,),
        "receive": (GET_MESSAGES,),
        "delete": (DELETE_MESSAGE,),
        "extend": (UPDATE_MESSAGE,),
        "approximate_count": (GET_QUEUE_METADATA,),
        "oldest_visible_at": (PEEK_MESSAGES,),
    },
    "queues": {
        "list_names": (LIST_QUEUES,),
    },
    "index": {
        "create": (INSERT_ENTITY,),
        "create_many": (INSERT_ENTITY,),  # Entity Group Transaction of inserts
        "project": (QUERY_ENTITIES, MERGE_ENTITY),
        "project_many": (QUERY_ENTITIES, MERGE_ENTITY),
        "request_cancel": (MERGE_ENTITY,),
        "clear_cancel": (MERGE_ENTITY,),
        "get": (QUERY_ENTITIES,),
        "list": (QUERY_ENTITIES,),
        "delete": (DELETE_ENTITY,),
        "created_before": (QUERY_ENTITIES,),
        "active": (QUERY_ENTITIES,),
    },
    "registry": {
        "beat": (UPSERT_ENTITY,),
        "remove": (DELETE_ENTITY,),
        "workers": (QUERY_ENTITIES,),
        "note_queues": (UPSERT_ENTITY,),
        "queues": (QUERY_ENTITIES,),
        "note_failure": (UPSERT_ENTITY,),
        "failures": (QUERY_ENTITIES,),
        "note_machine": (UPSERT_ENTITY,),
        "machines": (QUERY_ENTITIES,),
    },
    "schedules": {
        "create": (INSERT_ENTITY,),
        "get": (QUERY_ENTITIES,),
        "list": (QUERY_ENTITIES,),
        "update": (UPDATE_ENTITY,),
        "delete": (QUERY_ENTITIES, DELETE_ENTITY),
    },
}


BY_NAME: dict[str, RestOperation] = {
    op.name: op for methods in OPERATIONS.values() for ops in methods.values() for op in ops
}
"""Every REST operation above, by name."""
