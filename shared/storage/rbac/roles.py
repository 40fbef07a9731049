"""Azure's built-in storage roles: what each lets its holder do, as Azure defines it.

The permissions are the roles' ``actions`` and ``dataActions`` as Microsoft publishes them
("Azure built-in roles for Storage", learn.microsoft.com/azure/role-based-access-control/
built-in-roles/storage); the role ids are the same in every tenant. A ``*`` in a permission matches
any run of characters, as in a role definition. Only the roles dagq's templates may assign are
here: a template that assigns another one is refused by the permission model's derivation.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

_BLOB = "Microsoft.Storage/storageAccounts/blobServices"
_QUEUE = "Microsoft.Storage/storageAccounts/queueServices"
_TABLE = "Microsoft.Storage/storageAccounts/tableServices"


@dataclass(frozen=True)
class Role:
    """One built-in role: its id and the permissions it grants (actions and data actions)."""

    name: str
    role_id: str
    permissions: tuple[str, ...]

    def grants(self, permission: str) -> bool:
        """Whether this role grants ``permission`` (its patterns may hold ``*``)."""
        return any(fnmatch.fnmatchcase(permission, pattern) for pattern in self.permissions)


ROLES: tuple[Role, ...] = (
    Role(
        "Storage Blob Data Owner",
        "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
        (
            f"{_BLOB}/containers/*",
            f"{_BLOB}/generateUserDelegationKey/action",
            f"{_BLOB}/containers/blobs/*",
        ),
    ),
    Role(
        "Storage Blob Data Contributor",
        "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
        (
            f"{_BLOB}/containers/delete",
            f"{_BLOB}/containers/read",
            f"{_BLOB}/containers/write",
            f"{_BLOB}/generateUserDelegationKey/action",
            f"{_BLOB}/containers/blobs/delete",
            f"{_BLOB}/containers/blobs/read",
            f"{_BLOB}/containers/blobs/write",
            f"{_BLOB}/containers/blobs/move/action",
            f"{_BLOB}/containers/blobs/add/action",
        ),
    ),
    Role(
        "Storage Blob Data Reader",
        "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
        (
            f"{_BLOB}/containers/read",
            f"{_BLOB}/generateUserDelegationKey/action",
            f"{_BLOB}/containers/blobs/read",
        ),
    ),
    Role(
        "Storage Queue Data Contributor",
        "974c5e8b-45b9-4653-ba55-5f855dd0fb88",
        (
            f"{_QUEUE}/queues/delete",
            f"{_QUEUE}/queues/read",
            f"{_QUEUE}/queues/write",
            f"{_QUEUE}/queues/messages/delete",
            f"{_QUEUE}/queues/messages/read",
            f"{_QUEUE}/queues/messages/write",
            f"{_QUEUE}/queues/messages/add/action",
            f"{_QUEUE}/queues/messages/process/action",
        ),
    ),
    Role(
        "Storage Queue Data Reader",
        "19e7f393-937e-4f77-808e-94535e297925",
        (f"{_QUEUE}/queues/read", f"{_QUEUE}/queues/messages/read"),
    ),
    Role(
        "Storage Queue Data Message Processor",
        "8a0f0c08-91a1-4084-bc3d-661d67233fed",
        (f"{_QUEUE}/queues/messages/read", f"{_QUEUE}/queues/messages/process/action"),
    ),
    Role(
        "Storage Queue Data Message Sender",
        "c6a89b2d-59bc-44d0-9896-0f6e12d7b80a",
        (f"{_QUEUE}/queues/messages/add/action",),
    ),
    Role(
        "Storage Table Data Contributor",
        "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3",
        (
            f"{_TABLE}/tables/read",
            f"{_TABLE}/tables/write",
            f"{_TABLE}/tables/delete",
            f"{_TABLE}/tables/entities/read",
            f"{_TABLE}/tables/entities/write",
            f"{_TABLE}/tables/entities/delete",
            f"{_TABLE}/tables/entities/add/action",
            f"{_TABLE}/tables/entities/update/action",
        ),
    ),
    Role(
        "Storage Table Data Reader",
        "76199698-9eea-4c19-bc75-cec21354c6b6",
        (f"{_TABLE}/tables/read", f"{_TABLE}/tables/entities/read"),
    ),
    Role(
        "Monitoring Metrics Publisher",
        "3913510d-42f4-4e42-8a64-420c390055eb",
        (
            "Microsoft.Insights/Register/Action",
            "Microsoft.Insights/Metrics/Write",
            "Microsoft.Insights/Telemetry/Write",
        ),
    ),
)

ROLE_BY_NAME = {role.name: role for role in ROLES}
ROLE_BY_ID = {role.role_id: role for role in ROLES}
