"""Watch Azure Scheduled Events for Preempt (Spot eviction) and Terminate notices.

The instance metadata service lists upcoming events for a VM (Spot evictions get at least 30 s of
notice, Terminate 5-15 min when enabled; polled every second by default). On a notice for this VM
the agent stops taking work and hands its running tasks back (see ``agent.Agent.shutdown``), then,
if the event names this VM alone, acknowledges it (POST
``StartRequests`` with its EventId) so that Azure proceeds at once instead of waiting for NotBefore:
without it every scale-in kept its VM, billed, for the whole Terminate notice (5-15 min). When
several agents run on one VM (one per queue), only the last one to finish acknowledges
(:class:`PeerLock`), so no agent is cut off while it hands its tasks back.

The watcher is opt-in (``--scheduled-events``): nothing probes 169.254.169.254 unless the
deployment says it runs on Azure (the VM Scale Set's cloud-init and the AKS manifests turn it on).
Microsoft documents that the first request *enables* Scheduled Events for the VM and may take up to
two minutes to answer ("Enabling and Disabling Scheduled Events", Scheduled Events for Linux VMs),
so the first request waits ``FIRST_TIMEOUT_S`` and a failed request is retried with backoff. Only
an address the network cannot reach at all (no route: not an Azure VM) turns the watcher off.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

SHUTDOWN_EVENT_TYPES = frozenset({"Preempt", "Terminate"})
FIRST_TIMEOUT_S = 150.0
"""The first request: Scheduled Events may take up to two minutes to answer while it is enabled."""
POLL_TIMEOUT_S = 10.0
"""Later requests (the service answers at once when enabled)."""
MAX_BACKOFF_S = 60.0
UNREACHABLE = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL})
"""Errors that mean the metadata address does not exist from here: the watcher turns off."""


@dataclass(frozen=True)
class Notice:
    """A scheduled event that ends this VM."""

    event_id: str
    event_type: str
    not_before: float | None
    """When the platform may act (epoch seconds), if the event says."""
    sole: bool = False
    """The event names this VM and no other: only then may the agent acknowledge it, since an
    acknowledgement releases every VM the event names (a scale-in of several VMs, a Preempt of
    several Spot VMs)."""


def _parse_time(text: object) -> float | None:
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError):
        return None


def parse_notices(document: Any, vm_name: str | None) -> list[Notice]:
    """The Preempt/Terminate events of a Scheduled Events document that concern ``vm_name``.

    An event with no ``Resources`` (or when the VM's name is unknown) concerns this VM.
    """
    if not isinstance(document, dict) or not isinstance(document.get("Events"), list):
        return []
    notices = []
    for event in document["Events"]:
        if not isinstance(event, dict) or event.get("EventType") not in SHUTDOWN_EVENT_TYPES:
            continue
        resources = event.get("Resources") or []
        if vm_name and isinstance(resources, list) and resources and vm_name not in resources:
            continue
        notices.append(
            Notice(
                event_id=str(event.get("EventId", "")),
                event_type=str(event["EventType"]),
                not_before=_parse_time(event.get("NotBefore")),
                sole=bool(vm_name) and resources == [vm_name],
            )
        )
    return notices


def _get(url: str, timeout_s: float) -> bytes:
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"metadata URL must be http(s): {url!r}")
    request = urllib.request.Request(url, headers={"Metadata": "true"})  # noqa: S310 - checked
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        body: bytes = response.read(1024 * 1024)
        return body


def unreachable(exc: BaseException) -> bool:
    """Whether a failed request means the address cannot be reached at all (not an Azure VM)."""
    if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, OSError):
        exc = exc.reason
    return isinstance(exc, OSError) and exc.errno in UNREACHABLE


def _vm_name(events_url: str) -> str:
    """This VM's name from the instance metadata service, else the host name."""
    parts = urlsplit(events_url)
    url = f"{parts.scheme}://{parts.netloc}/metadata/instance/compute/name?api-version=2021-02-01&format=text"
    try:
        name = _get(url, POLL_TIMEOUT_S).decode().strip()
    except (OSError, ValueError, urllib.error.URLError):
        name = ""
    return name or socket.gethostname()


Fetch = Callable[[str, float], bytes]
"""``fetch(url, timeout_s)``: GET with the Metadata header (``_get``; tests may pass their own)."""


class PreemptionWatcher:
    """Polls the Scheduled Events endpoint and calls ``on_notice`` once for the first notice."""

    def __init__(
        self,
        url: str,
        *,
        poll_s: float,
        vm_name: str | None = None,
        first_timeout_s: float = FIRST_TIMEOUT_S,
        fetch: Fetch = _get,
    ) -> None:
        self.url = url
        self.poll_s = poll_s
        self.vm_name = vm_name
        self.first_timeout_s = first_timeout_s
        self.fetch = fetch
        self.answered = False
        """Set once the endpoint has answered (from then on requests use ``POLL_TIMEOUT_S``)."""

    async def run(self, on_notice: Callable[[Notice], None]) -> None:
        """Watch until a notice arrives (then return) or the endpoint proves unreachable."""
        if not self.url:
            return
        failures, watching = 0, False
        while True:
            try:
                document = await asyncio.to_thread(self._poll)
            except (OSError, ValueError, urllib.error.URLError) as exc:
                if unreachable(exc):
                    log.info(
                        "Scheduled Events unreachable at %s (%s): preemption watcher off",
                        self.url,
                        exc,
                    )
                    return
                failures += 1
                delay = min(MAX_BACKOFF_S, self.poll_s * 2 ** min(failures, 10))
                log.warning("Scheduled Events request failed (%s); retrying in %.0f s", exc, delay)
                await asyncio.sleep(delay)
                continue
            if self.vm_name is None:
                self.vm_name = await asyncio.to_thread(_vm_name, self.url)
            if failures or not watching:
                log.info("watching Scheduled Events for %s at %s", self.vm_name, self.url)
                failures, watching = 0, True
            notices = parse_notices(document, self.vm_name)
            if notices:
                on_notice(notices[0])
                return
            await asyncio.sleep(self.poll_s)

    def _poll(self) -> Any:
        timeout = POLL_TIMEOUT_S if self.answered else self.first_timeout_s
        body = self.fetch(self.url, timeout)
        self.answered = True
        return json.loads(body)


def seconds_left(notice: Notice, now: float | None = None) -> float | None:
    """Seconds until the notice's NotBefore (None if it gives no time)."""
    if notice.not_before is None:
        return None
    return notice.not_before - (time.time() if now is None else now)


def _post(url: str, body: bytes, timeout_s: float) -> None:
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"metadata URL must be http(s): {url!r}")
    request = urllib.request.Request(  # noqa: S310 - scheme checked
        url, data=body, method="POST", headers={"Metadata": "true"}
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        response.read(1024)


Post = Callable[[str, bytes, float], None]
"""``post(url, body, timeout_s)``: POST with the Metadata header (``_post``; tests may pass their
own)."""


def acknowledge(url: str, notice: Notice, post: Post = _post) -> bool:
    """Tell Azure it may go ahead with ``notice`` now ("Scheduled Events for Linux VMs": POST
    ``{"StartRequests": [{"EventId": ...}]}``). Returns whether the request succeeded; a failure
    only costs the wait until NotBefore, so it is logged, never raised.

    An acknowledgement releases every VM the event names, so an event that names other VMs too
    (or none) is not acknowledged: the others' agents may still be handing back, and Azure goes
    ahead at NotBefore anyway."""
    if not notice.sole:
        log.info(
            "not acknowledging scheduled event %s %s: it does not name this VM alone",
            notice.event_type,
            notice.event_id,
        )
        return False
    body = json.dumps({"StartRequests": [{"EventId": notice.event_id}]}).encode()
    try:
        post(url, body, POLL_TIMEOUT_S)
    except (OSError, ValueError, urllib.error.URLError) as exc:
        log.warning("could not acknowledge scheduled event %s: %s", notice.event_id, exc)
        return False
    log.info("acknowledged scheduled event %s %s", notice.event_type, notice.event_id)
    return True


class PeerLock:
    """Which agents of this VM are still running: each holds a lock on its own file in a shared
    directory (the work dir's ``.agents``) for as long as it runs.

    The lock is released when its process ends, however it ends, so a crashed agent never
    counts as running."""

    def __init__(self, directory: Path, worker_id: str) -> None:
        self.directory = directory
        self.path = directory / f"{worker_id.replace('/', '_')}.lock"
        self._file: IO[bytes] | None = None

    def hold(self) -> None:
        """Mark this agent as running (until :meth:`release` or the process ends)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("wb")
        fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def release(self) -> None:
        """This agent is done (its tasks are handed back)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def others_running(self) -> bool:
        """Whether another agent of this VM still holds its lock."""
        for path in self.directory.glob("*.lock"):
            if path == self.path:
                continue
            with path.open("rb") as other:
                try:
                    fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    return True
        return False
