"""Queue triggers: a queue polled per function, with host.json's ``extensions.queues`` semantics."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
from typing import Any

from devtools.localhost.app import Function
from devtools.localhost.config import HostError, QueueOptions, resolve
from devtools.localhost.waits import quietly, sleep_unless

log = logging.getLogger("dagq.localhost")

RECEIVE_VISIBILITY_S = 60
"""Messages are received invisible for this long and renewed every third of it while running."""
MIN_POLL_S = 0.1


def _queue_service(connection: str) -> Any:
    """A queue service client for a binding's ``connection`` setting name."""
    from azure.storage.queue.aio import QueueServiceClient

    conn = os.environ.get(connection) or os.environ.get(f"AzureWebJobs{connection}")
    if conn:
        return QueueServiceClient.from_connection_string(conn)
    uri = os.environ.get(f"{connection}__queueServiceUri")
    account = os.environ.get(f"{connection}__accountName")
    if uri or account:
        from azure.identity.aio import DefaultAzureCredential

        client_id = os.environ.get(f"{connection}__clientId")
        credential = DefaultAzureCredential(managed_identity_client_id=client_id)
        return QueueServiceClient(uri or f"https://{account}.queue.core.windows.net", credential)
    raise HostError(
        f"queue trigger connection {connection!r}: set {connection} to a connection string (or"
        f" {connection}__accountName / {connection}__queueServiceUri for an identity)"
    )


class QueueListener:
    """Polls one queue for one queue-triggered function, with host.json semantics."""

    def __init__(self, function: Function, options: QueueOptions) -> None:
        self.function = function
        self.options = options
        self.queue_name = resolve(function.trigger["queueName"], f"function {function.name}")
        self.connection = str(function.trigger.get("connection") or "AzureWebJobsStorage")
        self.in_flight: set[asyncio.Task[None]] = set()

    async def run(self, stopping: asyncio.Event) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        async with _queue_service(self.connection) as service:
            queue = service.get_queue_client(self.queue_name)
            poison = service.get_queue_client(f"{self.queue_name}-poison")
            delay = MIN_POLL_S
            while not stopping.is_set():
                if len(self.in_flight) > self.options.threshold:
                    await asyncio.wait(self.in_flight, return_when=asyncio.FIRST_COMPLETED)
                    continue
                try:
                    messages = [
                        m
                        async for m in queue.receive_messages(
                            messages_per_page=self.options.batch_size,
                            max_messages=self.options.batch_size,
                            visibility_timeout=RECEIVE_VISIBILITY_S,
                        )
                    ]
                except ResourceNotFoundError:
                    messages = []  # the queue does not exist yet: poll until it does
                except Exception as exc:
                    log.warning("receiving from %s failed: %s", self.queue_name, exc)
                    messages = []
                if not messages:
                    await sleep_unless(stopping, delay)
                    delay = min(delay * 2, self.options.max_polling_interval_s)
                    continue
                delay = MIN_POLL_S
                for message in messages:
                    task = asyncio.create_task(self._process(queue, poison, message))
                    self.in_flight.add(task)
                    task.add_done_callback(self.in_flight.discard)

    async def drain(self, timeout_s: float) -> None:
        """Wait for running invocations (shutdown)."""
        if self.in_flight:
            await asyncio.wait(self.in_flight, timeout=timeout_s)

    async def _process(self, queue: Any, poison: Any, message: Any) -> None:
        from azure.functions.queue import QueueMessage

        holder = {"receipt": message.pop_receipt}
        if message.dequeue_count > self.options.max_dequeue_count:
            await self._to_poison(queue, poison, message, holder["receipt"])
            return
        try:
            body = self._decode(message.content)
        except ValueError as exc:
            log.error("message %s on %s cannot be decoded: %s", message.id, self.queue_name, exc)
            await self._to_poison(queue, poison, message, holder["receipt"])
            return
        argument = QueueMessage(  # type: ignore[no-untyped-call]
            id=message.id,
            body=body,
            dequeue_count=message.dequeue_count,
            pop_receipt=message.pop_receipt,
            insertion_time=message.inserted_on,
            expiration_time=message.expires_on,
            time_next_visible=message.next_visible_on,
        )
        renewer = asyncio.create_task(self._renew(queue, message, holder))
        try:
            await self.function.invoke(argument)
        except Exception:
            log.exception(
                "function %s failed on message %s (dequeue count %d)",
                self.function.name, message.id, message.dequeue_count,
            )  # fmt: skip
            renewer.cancel()
            await quietly(renewer)
            if message.dequeue_count >= self.options.max_dequeue_count:
                await self._to_poison(queue, poison, message, holder["receipt"])
            else:
                with contextlib.suppress(Exception):
                    await queue.update_message(
                        message.id,
                        holder["receipt"],
                        visibility_timeout=int(self.options.visibility_timeout_s),
                    )
            return
        renewer.cancel()
        await quietly(renewer)
        with contextlib.suppress(Exception):
            await queue.delete_message(message.id, holder["receipt"])

    def _decode(self, content: str | bytes) -> bytes:
        raw = content.encode("utf-8") if isinstance(content, str) else content
        if self.options.message_encoding == "base64":
            return base64.b64decode(raw, validate=True)
        return raw

    async def _renew(self, queue: Any, message: Any, holder: dict[str, str]) -> None:
        while True:
            await asyncio.sleep(RECEIVE_VISIBILITY_S / 3)
            try:
                updated = await queue.update_message(
                    message.id, holder["receipt"], visibility_timeout=RECEIVE_VISIBILITY_S
                )
            except Exception as exc:
                log.warning("could not renew message %s: %s", message.id, exc)
                return
            holder["receipt"] = updated.pop_receipt

    async def _to_poison(self, queue: Any, poison: Any, message: Any, receipt: str) -> None:
        from azure.core.exceptions import ResourceExistsError

        log.warning(
            "message %s on %s moved to %s after %d attempts",
            message.id, self.queue_name, poison.queue_name, message.dequeue_count,
        )  # fmt: skip
        with contextlib.suppress(ResourceExistsError):
            await poison.create_queue()
        await poison.send_message(message.content, time_to_live=-1)
        with contextlib.suppress(Exception):
            await queue.delete_message(message.id, receipt)
