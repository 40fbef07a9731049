"""Watch Azure Scheduled Events for Preempt (Spot eviction) and Terminate notices.

The instance metadata service lists upcoming events for a VM (Spot evictions get at least 30 s of
notice, Terminate 5-15 min when enabled). On a notice for this VM the agent stops taking work and
hands its running tasks back (see ``agent.Agent.shutdown``). Off an Azure VM the endpoint is
unreachable: the first failed poll turns the watcher off quietly. Acknowledging events is not
needed: the platform proceeds at NotBefore anyway.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

SHUTDOWN_EVENT_TYPES = frozenset({"Preempt", "Terminate"})
_HTTP_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Notice:
    """A scheduled event that ends this VM."""

    event_id: str
    event_type: str
    not_before: float | None
    """When the platform may act (epoch seconds), if the event says."""


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
            )
        )
    return notices


def _get(url: str) -> bytes:
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"metadata URL must be http(s): {url!r}")
    request = urllib.request.Request(url, headers={"Metadata": "true"})  # noqa: S310 - checked
    with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as response:  # noqa: S310
        body: bytes = response.read(1024 * 1024)
        return body


def _vm_name(events_url: str) -> str:
    """This VM's name from the instance metadata service, else the host name."""
    parts = urlsplit(events_url)
    url = f"{parts.scheme}://{parts.netloc}/metadata/instance/compute/name?api-version=2021-02-01&format=text"
    try:
        name = _get(url).decode().strip()
    except (OSError, ValueError, urllib.error.URLError):
        name = ""
    return name or socket.gethostname()


class PreemptionWatcher:
    """Polls the Scheduled Events endpoint and calls ``on_notice`` once for the first notice."""

    def __init__(self, url: str, *, poll_s: float, vm_name: str | None = None) -> None:
        self.url = url
        self.poll_s = poll_s
        self.vm_name = vm_name

    async def run(self, on_notice: Callable[[Notice], None]) -> None:
        """Watch until a notice arrives (then return) or the endpoint proves unreachable."""
        if not self.url:
            return
        try:
            document = await asyncio.to_thread(self._fetch)
        except (OSError, ValueError, urllib.error.URLError) as exc:
            log.info(
                "Scheduled Events not reachable at %s (%s): preemption watcher off", self.url, exc
            )
            return
        if self.vm_name is None:
            self.vm_name = await asyncio.to_thread(_vm_name, self.url)
        log.info("watching Scheduled Events for %s at %s", self.vm_name, self.url)
        while True:
            notices = parse_notices(document, self.vm_name)
            if notices:
                on_notice(notices[0])
                return
            await asyncio.sleep(self.poll_s)
            try:
                document = await asyncio.to_thread(self._fetch)
            except (OSError, ValueError, urllib.error.URLError) as exc:
                log.debug("Scheduled Events poll failed: %s", exc)
                document = None

    def _fetch(self) -> Any:
        return json.loads(_get(self.url))


def seconds_left(notice: Notice, now: float | None = None) -> float | None:
    """Seconds until the notice's NotBefore (None if it gives no time)."""
    if notice.not_before is None:
        return None
    return notice.not_before - (time.time() if now is None else now)
