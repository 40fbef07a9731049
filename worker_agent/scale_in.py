"""Protect this VM from scale-in while it runs a task (VM Scale Set instance protection).

Autoscale removes a VM when the pool's queues hold fewer tasks than it has VMs, and picks the VM
by its scale-in policy (NewestVM), not by idleness: without protection it may delete a VM in the
middle of a long GPU task. Microsoft's answer is instance protection ("Instance Protection for
Azure Virtual Machine Scale Set instances"): an instance with ``protectFromScaleIn`` is skipped by
scale-in. The agent sets it on its own instance when one of its slots takes a task and clears it
when the VM has nothing running, so the idle VMs are the ones scale-in takes.

Calls, each with a timeout and never raised to the agent (a failure is logged and costs only the
protection):

- the instance metadata service (``Metadata: true``): this instance's ARM resource id
  (``/metadata/instance/compute/resourceId``) and a managed identity token for ARM
  (``/metadata/identity/oauth2/token``, the worker identity's ``client_id``);
- ARM: ``PUT <resource id>?api-version=...`` with ``{"properties": {"protectionPolicy":
  {"protectFromScaleIn": <bool>}}}``, allowed to the worker identity by a custom role scoped to the
  scale set (infra/modules/gpu-vmss.bicep).

Several agents may share a VM (one per queue): each holds a lock file in ``<work dir>/.busy/``
while it runs a task (:class:`~worker_agent.preemption.PeerLock`), transitions are serialized by
an exclusive lock on ``<work dir>/.scale-in.lock``, and protection is cleared only when no agent of
the VM is busy.

Off unless the worker's settings say it runs in a VM Scale Set (``--scale-in-protection``; the
scale set's cloud-init turns it on): nothing contacts the metadata address or ARM otherwise.
"""

from __future__ import annotations

import fcntl
import json
import logging
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from worker_agent.preemption import PeerLock

log = logging.getLogger(__name__)

ARM_RESOURCE = "https://management.azure.com/"
"""The audience of the token (the ARM endpoint of Azure's public cloud)."""
API_VERSION = "2024-03-01"
"""Microsoft.Compute API version of the instance update (the template's scale set uses it too)."""
TIMEOUT_S = 10.0
RENEW_BEFORE_S = 300.0
_INSTANCE = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Compute/"
    r"virtualMachineScaleSets/[^/]+/virtualMachines/[^/]+$",
    re.IGNORECASE,
)


class ScaleInProtection:
    """Sets and clears ``protectFromScaleIn`` on this VM Scale Set instance (see module doc)."""

    def __init__(
        self,
        *,
        metadata_url: str,
        arm_url: str,
        client_id: str | None,
        work_dir: Path,
        worker_id: str,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        parts = urlsplit(metadata_url)
        if parts.scheme not in ("http", "https") or urlsplit(arm_url).scheme not in (
            "http",
            "https",
        ):
            raise ValueError("metadata and ARM URLs must be http(s)")
        self.metadata_base = f"{parts.scheme}://{parts.netloc}"
        self.arm_url = arm_url.rstrip("/")
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.busy_marks = PeerLock(work_dir / ".busy", worker_id)
        self.mutex_path = work_dir / ".scale-in.lock"
        self.resource_id: str | None = None
        self._token: str | None = None
        self._token_expires = 0.0

    # -- what the agent calls (blocking: run it in a thread) -------------------------------------

    def busy(self) -> bool:
        """A slot of this agent took a task: protect the VM. Returns whether ARM accepted it."""
        with self._serialized():
            try:
                self.busy_marks.hold()
            except OSError as exc:
                log.warning("cannot mark this agent busy in %s: %s", self.busy_marks.directory, exc)
            return self._set(True)

    def idle(self) -> bool | None:
        """No slot of this agent runs a task: clear the protection unless another agent of the
        VM is busy (None: left to that agent)."""
        with self._serialized():
            self.busy_marks.release()
            if self.busy_marks.directory.exists() and self.busy_marks.others_running():
                return None
            return self._set(False)

    # -- the calls -------------------------------------------------------------------------------

    def _set(self, protect: bool) -> bool:
        try:
            resource_id = self._resource_id()
            body = json.dumps(
                {"properties": {"protectionPolicy": {"protectFromScaleIn": protect}}}
            ).encode()
            url = f"{self.arm_url}{resource_id}?api-version={API_VERSION}"
            request = urllib.request.Request(  # noqa: S310 - scheme checked in __init__
                url,
                data=body,
                method="PUT",
                headers={
                    "Authorization": f"Bearer {self._arm_token()}",
                    "Content-Type": "application/json",
                },
            )
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                response.read(64 * 1024)
        except (OSError, ValueError, KeyError, TypeError, urllib.error.URLError) as exc:
            log.warning("could not %s scale-in protection: %s", "set" if protect else "clear", exc)
            return False
        log.info("scale-in protection %s", "on" if protect else "off")
        return True

    def _metadata(self, path: str, query: dict[str, str]) -> bytes:
        url = f"{self.metadata_base}{path}?{urllib.parse.urlencode(query)}"
        request = urllib.request.Request(url, headers={"Metadata": "true"})  # noqa: S310
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
            body: bytes = response.read(1024 * 1024)
            return body

    def _resource_id(self) -> str:
        if self.resource_id is None:
            text = self._metadata(
                "/metadata/instance/compute/resourceId",
                {"api-version": "2021-02-01", "format": "text"},
            )
            resource_id = text.decode().strip()
            if not _INSTANCE.match(resource_id):
                raise ValueError(f"not a VM Scale Set instance: {resource_id!r}")
            self.resource_id = resource_id
        return self.resource_id

    def _arm_token(self) -> str:
        if self._token is None or time.time() > self._token_expires - RENEW_BEFORE_S:
            query = {"api-version": "2018-02-01", "resource": ARM_RESOURCE}
            if self.client_id:
                query["client_id"] = self.client_id
            answer = json.loads(self._metadata("/metadata/identity/oauth2/token", query))
            self._token = str(answer["access_token"])
            self._token_expires = float(answer.get("expires_on") or 0)
        return self._token

    def _serialized(self) -> _FileMutex:
        return _FileMutex(self.mutex_path)


class _FileMutex:
    """An exclusive lock on a file for the length of a ``with`` block (across processes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None

    def __enter__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("ab")
        fcntl.flock(handle, fcntl.LOCK_EX)
        self._file = handle

    def __exit__(self, *exc: object) -> None:
        handle = self._file
        self._file = None
        if handle is not None:
            handle.close()
