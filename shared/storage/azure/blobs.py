"""Blob adapters on Azure Storage: workflow definitions and states, outputs (dead letters:
``deadletters``).

- Definitions and states are created with If-None-Match ``*`` (create-only); a state is then only
  replaced with If-Match on the ETag it was read with (412 -> StaleStateError), never blindly.
- Every state write also writes the blob's metadata, so workers can read ``status`` with one HEAD.
- Definition and state blobs hold binary codecs (``application/octet-stream``).
"""

from __future__ import annotations

import asyncio
import builtins

from azure.core import MatchConditions
from azure.core.exceptions import (
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)
from azure.storage.blob import ContentSettings
from azure.storage.blob.aio import ContainerClient, StorageStreamDownloader

from shared.errors import ConflictError, NotFoundError, StaleStateError
from shared.limits import MAX_JOB_MARKS
from shared.names import ResourceNames
from shared.storage.azure import definitions
from shared.storage.azure.errors import raise_missing
from shared.storage.azure.retry import repeated
from shared.storage.encoding import (
    definition_metadata,
    mark_time,
    purge_marker_from_json,
    purge_marker_json,
)
from shared.storage.ports import PurgeMark, StoredState
from shared.storage.repeat import is_repeat

BINARY = ContentSettings(content_type="application/octet-stream")
JSON = ContentSettings(content_type="application/json")

DELETE_CONCURRENCY = 16
"""Blob deletes a purge keeps in flight at once."""


@repeated
async def delete_if_present(container: ContainerClient, name: str) -> bool:
    """Delete a blob; False (no error) if it was not there (on a repeat: True, the earlier try
    deleted it, as far as anyone can tell)."""
    try:
        await container.delete_blob(name)
    except ResourceNotFoundError as error:
        if getattr(error, "error_code", None) == "ContainerNotFound":
            raise_missing(error, container.container_name, f"blob {name!r}")
        return is_repeat()
    return True


def _is_create_conflict(error: HttpResponseError) -> bool:
    # If-None-Match: * on an existing blob is 409 BlobAlreadyExists (412 on some service versions).
    return error.status_code in (409, 412)


async def create_blob_if_absent(
    container: ContainerClient,
    name: str,
    data: bytes,
    *,
    metadata: dict[str, str] | None = None,
    content_settings: ContentSettings = BINARY,
) -> str | None:
    """Upload ``name`` only if it does not exist; its ETag, or None if it existed already."""
    try:
        result = await container.get_blob_client(name).upload_blob(
            data,
            overwrite=True,
            match_condition=MatchConditions.IfMissing,
            metadata=metadata,
            content_settings=content_settings,
        )
    except ResourceNotFoundError as error:
        raise_missing(error, container.container_name, f"blob {name!r}")
    except (ResourceExistsError, ResourceModifiedError) as error:
        if not _is_create_conflict(error):
            raise
        if is_repeat():  # perhaps our own earlier try, whose answer was lost
            return await _etag_if_holding(container, name, data, metadata)
        return None
    return str(result["etag"])


async def _etag_if_holding(
    container: ContainerClient, name: str, data: bytes, metadata: dict[str, str] | None
) -> str | None:
    """The blob's ETag if it holds exactly ``data`` (and ``metadata``, when given), else None."""
    try:
        downloader = await container.download_blob(name)
        stored = await downloader.readall()
    except ResourceNotFoundError:
        return None
    properties = downloader.properties
    if stored != data or (metadata is not None and dict(properties.metadata or {}) != metadata):
        return None
    return str(properties.etag)


class AzureWorkflowBlobs:
    """WorkflowBlobs in the ``{prefix}-workflows`` container."""

    def __init__(self, container: ContainerClient) -> None:
        self.container = container

    @repeated
    async def create_definition(
        self, workflow_id: str, data: bytes, incarnation: int | None = None
    ) -> bool:
        name = ResourceNames.definition_blob(workflow_id)
        meta = definition_metadata(incarnation)
        return await create_blob_if_absent(self.container, name, data, metadata=meta) is not None

    @repeated
    async def write_definition(
        self, workflow_id: str, data: bytes, incarnation: int | None
    ) -> None:
        await definitions.write_definition(self.container, workflow_id, data, incarnation)

    @repeated
    async def definition_properties(self, workflow_id: str) -> tuple[int | None, str]:
        return await definitions.definition_properties(self.container, workflow_id)

    @repeated
    async def delete_definition(self, workflow_id: str, etag: str) -> bool:
        return await definitions.delete_definition(self.container, workflow_id, etag)

    @repeated
    async def read_definition(self, workflow_id: str) -> bytes:
        name = ResourceNames.definition_blob(workflow_id)
        try:
            downloader = await self.container.download_blob(name)
            return await downloader.readall()
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"definition of {workflow_id!r}")

    @repeated
    async def create_state(self, workflow_id: str, data: bytes, metadata: dict[str, str]) -> str:
        name = ResourceNames.state_blob(workflow_id)
        etag = await create_blob_if_absent(self.container, name, data, metadata=metadata)
        if etag is None:
            raise ConflictError(f"the state of workflow {workflow_id!r} exists already")
        return etag

    @repeated
    async def read_state(self, workflow_id: str) -> StoredState:
        name = ResourceNames.state_blob(workflow_id)
        try:
            downloader = await self.container.download_blob(name)
            data = await downloader.readall()
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"state of {workflow_id!r}")
        # The ETag and metadata of the very version downloaded (the SDK pins chunked reads to it).
        properties = downloader.properties
        return StoredState(data, str(properties.etag), dict(properties.metadata or {}))

    @repeated
    async def write_state(
        self, workflow_id: str, data: bytes, etag: str, metadata: dict[str, str]
    ) -> str:
        name = ResourceNames.state_blob(workflow_id)
        blob = self.container.get_blob_client(name)
        try:
            result = await blob.upload_blob(
                data,
                overwrite=True,
                etag=etag,
                match_condition=MatchConditions.IfNotModified,
                metadata=metadata,
                content_settings=BINARY,
            )
        except ResourceModifiedError as error:
            if is_repeat():  # perhaps our own earlier try, whose answer was lost
                written = await _etag_if_holding(self.container, name, data, metadata)
                if written is not None:
                    return written
            # If-Match on a deleted blob is a 412 too: tell "vanished" apart (conflict path only).
            if not await blob.exists():
                raise NotFoundError(
                    f"the state of workflow {workflow_id!r} no longer exists"
                ) from error
            raise StaleStateError(
                f"the state of workflow {workflow_id!r} changed since it was read (ETag {etag}): "
                "re-read and re-apply"
            ) from error
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"state of {workflow_id!r}")
        return str(result["etag"])

    @repeated
    async def state_metadata(self, workflow_id: str) -> dict[str, str]:
        return (await self.state_properties(workflow_id))[0]

    @repeated
    async def state_properties(self, workflow_id: str) -> tuple[dict[str, str], str]:
        name = ResourceNames.state_blob(workflow_id)
        try:
            properties = await self.container.get_blob_client(name).get_blob_properties()
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"state of {workflow_id!r}")
        return dict(properties.metadata), str(properties.etag)

    @repeated
    async def delete(
        self, workflow_id: str, etag: str | None = None, *, definition: bool = True
    ) -> None:
        state = ResourceNames.state_blob(workflow_id)
        if etag is None:
            await delete_if_present(self.container, state)
        else:
            try:
                await self.container.delete_blob(
                    state, etag=etag, match_condition=MatchConditions.IfNotModified
                )
            except ResourceModifiedError:
                # If-Match on a deleted blob is a 412 too: gone already is no error.
                if await self.container.get_blob_client(state).exists():
                    raise StaleStateError(
                        f"the state of workflow {workflow_id!r} changed since it was read "
                        f"(ETag {etag}): it was not deleted"
                    ) from None
            except ResourceNotFoundError as error:
                if getattr(error, "error_code", None) == "ContainerNotFound":
                    raise_missing(error, self.container.container_name, f"blob {state!r}")
        if definition:
            await delete_if_present(self.container, ResourceNames.definition_blob(workflow_id))

    @repeated
    async def mark_purge(self, workflow_id: str, mark: PurgeMark) -> None:
        name = ResourceNames.purge_marker_blob(workflow_id)
        try:
            await self.container.upload_blob(
                name, purge_marker_json(mark), overwrite=True, content_settings=JSON
            )
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"blob {name!r}")

    @repeated
    async def purge_marks(self, limit: int = 1000) -> dict[str, PurgeMark]:
        prefix = ResourceNames.PURGE_MARKER_PREFIX
        names: builtins.list[str] = []
        async for blob in self.container.list_blobs(name_starts_with=prefix):
            if len(names) >= limit:
                break
            names.append(blob.name)

        @repeated
        async def mark(name: str) -> PurgeMark | None:
            try:
                downloader = await self.container.download_blob(name)
            except ResourceNotFoundError:  # finished meanwhile by a concurrent purge
                return None
            return purge_marker_from_json(await downloader.readall())

        found = await asyncio.gather(*(mark(name) for name in names))
        return {
            n.removeprefix(prefix): m for n, m in zip(names, found, strict=True) if m is not None
        }

    @repeated
    async def unmark_purge(self, workflow_id: str) -> None:
        await delete_if_present(self.container, ResourceNames.purge_marker_blob(workflow_id))

    @repeated
    async def mark_job(self, job: str, at: float) -> None:
        name = ResourceNames.job_mark_blob(job)
        try:
            await self.container.upload_blob(
                name, repr(float(at)).encode(), overwrite=True, content_settings=JSON
            )
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"blob {name!r}")

    @repeated
    async def job_marks(self) -> dict[str, float]:
        prefix = ResourceNames.JOB_MARK_PREFIX
        names: builtins.list[str] = []
        async for blob in self.container.list_blobs(name_starts_with=prefix):
            if len(names) >= MAX_JOB_MARKS:
                break
            names.append(blob.name)

        @repeated
        async def at(name: str) -> float | None:
            try:
                downloader = await self.container.download_blob(name, offset=0, length=64)
                return mark_time(await downloader.readall())
            except ResourceNotFoundError:
                return None

        times = await asyncio.gather(*(at(name) for name in names))
        return {
            n.removeprefix(prefix): t for n, t in zip(names, times, strict=True) if t is not None
        }


def total_size(downloader: StorageStreamDownloader[bytes]) -> int:
    """The whole blob's size from a ranged download (its Content-Range header)."""
    content_range = getattr(downloader.properties, "content_range", None) or ""
    _, _, total = str(content_range).rpartition("/")
    return int(total) if total.isascii() and total.isdigit() else downloader.size


class AzureOutputBlobs:
    """OutputBlobs in the ``{prefix}-outputs`` container."""

    def __init__(self, container: ContainerClient) -> None:
        self.container = container

    @repeated
    async def put(self, name: str, data: bytes, *, content_type: str = "application/json") -> None:
        try:
            await self.container.upload_blob(
                name, data, overwrite=True, content_settings=ContentSettings(content_type)
            )
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"blob {name!r}")

    @repeated
    async def create_if_absent(self, name: str, data: bytes) -> bool:
        settings = ContentSettings("application/octet-stream")
        etag = await create_blob_if_absent(self.container, name, data, content_settings=settings)
        return etag is not None

    @repeated
    async def get(self, name: str) -> bytes:
        try:
            downloader = await self.container.download_blob(name)
            return await downloader.readall()
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"output blob {name!r}")

    @repeated
    async def append(
        self, name: str, data: bytes, *, at: int, content_type: str, create: bool = False
    ) -> None:
        blob = self.container.get_blob_client(name)
        try:
            if create:
                await blob.create_append_blob(content_settings=ContentSettings(content_type))
            if data:
                await blob.append_block(data, appendpos_condition=at)
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"append blob {name!r}")
        except HttpResponseError as error:
            if getattr(error, "error_code", None) != "AppendPositionConditionNotMet":
                raise
            size = (await blob.get_blob_properties()).size
            if size != at + len(data):  # not our own earlier try that landed
                raise ConflictError(f"append blob {name!r} holds {size} bytes, not {at}") from None

    @repeated
    async def read_range(self, name: str, start: int, max_bytes: int) -> tuple[bytes, int]:
        blob = self.container.get_blob_client(name)
        try:
            if max_bytes > 0:
                try:
                    downloader = await blob.download_blob(offset=start, length=max_bytes)
                    return await downloader.readall(), total_size(downloader)
                except HttpResponseError as error:
                    if error.status_code != 416:  # only "nothing at or after start" is empty
                        raise
            return b"", (await blob.get_blob_properties()).size
        except ResourceNotFoundError as error:
            raise_missing(error, self.container.container_name, f"output blob {name!r}")

    @repeated
    async def delete_prefix(self, prefix: str, *, segments: int | None = None) -> int:
        names = [
            blob.name
            async for blob in self.container.list_blobs(name_starts_with=prefix)
            if segments is None or blob.name.count("/") + 1 == segments
        ]
        slots = asyncio.Semaphore(DELETE_CONCURRENCY)

        async def one(name: str) -> bool:
            async with slots:
                return await delete_if_present(self.container, name)

        return sum(await asyncio.gather(*(one(name) for name in names)))
