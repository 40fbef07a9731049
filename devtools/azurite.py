"""Start and stop the Azurite storage emulator (installed from npm into node_modules/).

Used by the test session, the benchmarks and ``make up``. Flags follow ../shared/REFERENCE.md:
``--skipApiVersionCheck`` (current SDKs send newer API versions) and ``--disableTelemetry``
(otherwise Azurite reaches for a cloud metadata address and ignores SIGTERM).
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from shared.settings import AZURITE_ACCOUNT, azurite_connection_string

REPO_ROOT = Path(__file__).resolve().parent.parent
_LISTENING = re.compile(
    r"Azurite (Blob|Queue|Table) service is successfully listening at http://[^:]+:(\d+)"
)


class AzuriteError(RuntimeError):
    """Azurite could not be found or did not start."""


def new_account_key() -> str:
    """A random account key (64 bytes, base64, like Azure's). Every Azurite dagq starts has one of
    its own instead of the published development key: a web page reaching 127.0.0.1 (a DNS
    rebinding attack on the local stack) cannot sign a request it would accept."""
    return base64.b64encode(secrets.token_bytes(64)).decode("ascii")


def account_env(key: str) -> dict[str, str]:
    """The environment that makes Azurite accept ``key`` for its one account (and no other key)."""
    return {"AZURITE_ACCOUNTS": f"{AZURITE_ACCOUNT}:{key}"}


def azurite_binary() -> str:
    local = REPO_ROOT / "node_modules" / ".bin" / "azurite"
    if local.exists():
        return str(local)
    found = shutil.which("azurite")
    if found:
        return found
    raise AzuriteError("azurite is not installed: run `make install` (npm install) first")


@dataclass
class Azurite:
    """A running Azurite process on 127.0.0.1 (in-memory, or persisted under ``location``)."""

    location: Path | None = None
    ports: tuple[int, int, int] = (0, 0, 0)
    """Blob, queue and table ports; 0 picks free ones."""
    process: subprocess.Popen[str] | None = field(default=None, repr=False)
    bound: dict[str, int] = field(default_factory=dict)
    key: str = field(default_factory=new_account_key, repr=False)
    """The account key this Azurite accepts (its own: ``new_account_key``)."""
    _log: list[str] = field(default_factory=list, repr=False)

    def start(self, timeout_s: float = 30.0) -> Azurite:
        blob, queue, table = self.ports
        cmd = [
            azurite_binary(), "--silent", "--disableTelemetry", "--skipApiVersionCheck",
            "--blobHost", "127.0.0.1", "--queueHost", "127.0.0.1", "--tableHost", "127.0.0.1",
            "--blobPort", str(blob), "--queuePort", str(queue), "--tablePort", str(table),
        ]  # fmt: skip
        if self.location is None:
            cmd.append("--inMemoryPersistence")
            cwd = None
        else:
            self.location.mkdir(parents=True, exist_ok=True)
            cmd += ["--location", str(self.location)]
            cwd = str(self.location)
        self.process = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
            start_new_session=True, env={**os.environ, **account_env(self.key)},
        )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        assert self.process.stdout is not None
        while len(self.bound) < 3:
            if time.monotonic() > deadline:
                self.stop()
                raise AzuriteError("Azurite did not start in time:\n" + "".join(self._log))
            line = self.process.stdout.readline()
            if not line:
                self.stop()
                raise AzuriteError("Azurite exited during start-up:\n" + "".join(self._log))
            self._log.append(line)
            match = _LISTENING.search(line)
            if match:
                self.bound[match.group(1).lower()] = int(match.group(2))
        # Keep draining its output so a full pipe never blocks it.
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self) -> None:
        if self.process is None or self.process.stdout is None:
            return
        for _line in self.process.stdout:
            pass

    @property
    def connection_string(self) -> str:
        return azurite_connection_string(
            blob=self.bound["blob"], queue=self.bound["queue"], table=self.bound["table"],
            key=self.key,
        )  # fmt: skip

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def __enter__(self) -> Azurite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
