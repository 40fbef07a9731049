"""The async Azure SDK service clients of one storage account, created lazily from Settings.

Either a connection string (Azurite or a real account) or the account's service URIs authenticated
with ``DefaultAzureCredential`` (a managed identity in Azure; ``DAGQ_STORAGE__clientId`` picks a
user-assigned one). One service client per service, created on first use and reused, so a process
that only touches queues (a worker) never opens a blob or table client; ``close`` closes what was
opened. Clients use the aiohttp transport (the SDK's default for ``.aio``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import aiohttp
from azure.core.credentials_async import AsyncTokenCredential
from azure.core.pipeline.transport import AioHttpTransport
from azure.data.tables.aio import TableServiceClient
from azure.storage.blob.aio import BlobServiceClient
from azure.storage.queue.aio import QueueServiceClient

from shared.settings import Settings
from shared.storage.azure.retry import SDK_RETRY

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def _use_env_settings() -> bool:
    """Whether the SDK's aiohttp session should read proxy settings from the environment.

    Only when a proxy is configured: with ``trust_env`` aiohttp makes two thread-pool round trips
    per request (netrc and proxy lookups), which costs a large share of a queue operation's time.
    """
    return any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES)


KEEPALIVE_S = 4.0
"""How long an idle pooled connection is kept for reuse (aiohttp's default: 15 s). Shorter than
the servers' idle timeouts (Azurite's Node server: 5 s; Azure's front ends and load balancers:
longer), so that a request never goes out on a connection the server is closing just then."""


class _Transport(AioHttpTransport):  # type: ignore[misc]  # the SDK exports it lazily (Any)
    """The SDK's aiohttp transport with dagq's connection pool: idle connections are dropped
    after ``KEEPALIVE_S``, and aiohttp does not silently send a PUT or DELETE again when a
    reused connection breaks (it would hide from the adapters that a conditional write was sent
    twice: ``shared.storage.azure.retry`` repeats it, knowing)."""

    async def open(self) -> None:
        if self.session is None and self._session_owner:  # type: ignore[has-type]
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(keepalive_timeout=KEEPALIVE_S),
                trust_env=_use_env_settings(),
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
            )
            if hasattr(session, "_retry_connection"):  # aiohttp >= 3.12
                session._retry_connection = False
            self.session = session
        await super().open()


def _client_options() -> dict[str, Any]:
    """Keyword arguments of every service client: the transport, proxy settings, and the SDK
    retry policy's settings (connection errors are the adapters' to repeat:
    ``shared.storage.azure.retry``)."""
    return {"transport": _Transport(), "use_env_settings": _use_env_settings(), **SDK_RETRY}


_HTTP_LOGGER = "azure.core.pipeline.policies.http_logging_policy"


def _quiet_request_logging() -> None:
    """The SDK logs every request and response at INFO; a process logging at INFO would write
    several lines per queue operation. Raise that logger to WARNING unless someone set its level."""
    logger = logging.getLogger(_HTTP_LOGGER)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


class AzureClients:
    """Lazily created, shared service clients (blob, queue, table) for one account."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        _quiet_request_logging()
        self._credential: AsyncTokenCredential | None = None
        self._blob: BlobServiceClient | None = None
        self._queue: QueueServiceClient | None = None
        self._table: TableServiceClient | None = None

    def _token_credential(self) -> AsyncTokenCredential:
        if self._credential is None:
            # Imported here: azure-identity is slow to import and unused with connection strings.
            from azure.identity.aio import DefaultAzureCredential

            self._credential = DefaultAzureCredential(
                managed_identity_client_id=self.settings.storage_client_id
            )
        return self._credential

    @property
    def blob(self) -> BlobServiceClient:
        if self._blob is None:
            conn = self.settings.storage_connection_string
            self._blob = (
                BlobServiceClient.from_connection_string(conn, **_client_options())
                if conn
                else BlobServiceClient(
                    self.settings.service_uri("blob"),
                    credential=self._token_credential(),
                    **_client_options(),
                )
            )
        return self._blob

    @property
    def queue(self) -> QueueServiceClient:
        if self._queue is None:
            conn = self.settings.storage_connection_string
            # No message encode/decode policy: messages travel as plain text, matching the
            # Functions host's "messageEncoding": "none".
            self._queue = (
                QueueServiceClient.from_connection_string(conn, **_client_options())
                if conn
                else QueueServiceClient(
                    self.settings.service_uri("queue"),
                    credential=self._token_credential(),
                    **_client_options(),
                )
            )
        return self._queue

    @property
    def table(self) -> TableServiceClient:
        if self._table is None:
            conn = self.settings.storage_connection_string
            self._table = (
                TableServiceClient.from_connection_string(conn, **_client_options())
                if conn
                else TableServiceClient(
                    self.settings.service_uri("table"),
                    credential=self._token_credential(),
                    **_client_options(),
                )
            )
        return self._table

    async def close(self) -> None:
        """Close every client opened so far (and the credential)."""
        for client in (self._blob, self._queue, self._table, self._credential):
            if client is not None:
                await client.close()
        self._blob = self._queue = self._table = None
        self._credential = None
