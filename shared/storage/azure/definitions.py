"""Definition blobs on Azure Storage, each written as one incarnation's (its metadata): a purge
deletes one only while it is still the purged incarnation's (If-Match on the ETag of a HEAD that
said so), and a re-submit that relied on another incarnation's makes it its own by replacing it."""

from __future__ import annotations

from azure.core import MatchConditions
from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContentSettings
from azure.storage.blob.aio import ContainerClient

from shared.names import ResourceNames
from shared.storage.azure.errors import raise_missing
from shared.storage.encoding import definition_incarnation, definition_metadata
from shared.storage.repeat import is_repeat

BINARY = ContentSettings(content_type="application/octet-stream")


async def write_definition(
    container: ContainerClient, workflow_id: str, data: bytes, incarnation: int | None
) -> None:
    """Create or replace the definition blob as ``incarnation``'s (Put Blob)."""
    name = ResourceNames.definition_blob(workflow_id)
    try:
        await container.upload_blob(
            name,
            data,
            overwrite=True,
            metadata=definition_metadata(incarnation),
            content_settings=BINARY,
        )
    except ResourceNotFoundError as error:
        raise_missing(error, container.container_name, f"blob {name!r}")


async def definition_properties(
    container: ContainerClient, workflow_id: str
) -> tuple[int | None, str]:
    """The definition blob's incarnation (None: written before they were kept) and ETag (HEAD)."""
    name = ResourceNames.definition_blob(workflow_id)
    try:
        properties = await container.get_blob_client(name).get_blob_properties()
    except ResourceNotFoundError as error:
        raise_missing(error, container.container_name, f"definition of {workflow_id!r}")
    return definition_incarnation(properties.metadata or {}), str(properties.etag)


async def delete_definition(container: ContainerClient, workflow_id: str, etag: str) -> bool:
    """Delete the definition blob while it is at ``etag``; False if it changed or is gone (on a
    repeat, gone is True: the earlier try deleted it, as far as anyone can tell)."""
    name = ResourceNames.definition_blob(workflow_id)
    try:
        await container.delete_blob(name, etag=etag, match_condition=MatchConditions.IfNotModified)
    except ResourceModifiedError:
        return False
    except ResourceNotFoundError as error:
        if getattr(error, "error_code", None) == "ContainerNotFound":
            raise_missing(error, container.container_name, f"blob {name!r}")
        return is_repeat()
    return True
