"""The local host's configuration: host.json, local.settings.json and ``%NAME%`` binding
expressions."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PORT = 7071


class HostError(RuntimeError):
    """The app or its configuration cannot be hosted (bad host.json, missing setting...)."""


# -- configuration ---------------------------------------------------------------------------------


def parse_timespan(value: str | int | float) -> float:
    """Seconds of a host.json TimeSpan (``"00:00:02"``, ``"1.00:00:00"``) or a plain number."""
    if isinstance(value, int | float):
        return float(value)
    match = re.fullmatch(r"(?:(\d+)\.)?(\d+):(\d+):(\d+(?:\.\d+)?)", value.strip())
    if not match:
        raise HostError(f"invalid TimeSpan {value!r} in host.json: use hh:mm:ss")
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)


@dataclass(frozen=True)
class QueueOptions:
    """host.json ``extensions.queues`` (defaults are the Functions host's)."""

    batch_size: int = 16
    new_batch_threshold: int | None = None
    max_polling_interval_s: float = 60.0
    visibility_timeout_s: float = 0.0
    max_dequeue_count: int = 5
    message_encoding: str = "base64"

    @property
    def threshold(self) -> int:
        """Fetch a new batch when fewer than this many messages are in flight (host default:
        batchSize / 2)."""
        if self.new_batch_threshold is not None:
            return self.new_batch_threshold
        return self.batch_size // 2


@dataclass(frozen=True)
class HostConfig:
    route_prefix: str = "api"
    queues: QueueOptions = field(default_factory=QueueOptions)


def load_host_config(app_dir: Path) -> HostConfig:
    """Read host.json of the app (missing file: the host's defaults)."""
    path = app_dir / "host.json"
    if not path.exists():
        return HostConfig()
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise HostError(f"{path}: invalid JSON: {exc}") from None
    ext = data.get("extensions", {})
    http = ext.get("http", {})
    q = ext.get("queues", {})
    defaults = QueueOptions()
    queues = QueueOptions(
        batch_size=int(q.get("batchSize", defaults.batch_size)),
        new_batch_threshold=(
            int(q["newBatchThreshold"]) if q.get("newBatchThreshold") is not None else None
        ),
        max_polling_interval_s=parse_timespan(
            q.get("maxPollingInterval", defaults.max_polling_interval_s)
        ),
        visibility_timeout_s=parse_timespan(q.get("visibilityTimeout", 0)),
        max_dequeue_count=int(q.get("maxDequeueCount", defaults.max_dequeue_count)),
        message_encoding=str(q.get("messageEncoding", defaults.message_encoding)).lower(),
    )
    if not 1 <= queues.batch_size <= 32:
        raise HostError("host.json: extensions.queues.batchSize must be 1-32")
    if queues.message_encoding not in ("base64", "none"):
        raise HostError("host.json: extensions.queues.messageEncoding must be base64 or none")
    return HostConfig(route_prefix=str(http.get("routePrefix", "api")).strip("/"), queues=queues)


def load_local_settings(path: Path) -> dict[str, str]:
    """Export local.settings.json ``Values`` into the environment where not already set."""
    if not path.exists():
        return {}
    try:
        values = json.loads(path.read_text()).get("Values", {})
    except json.JSONDecodeError as exc:
        raise HostError(f"{path}: invalid JSON: {exc}") from None
    exported = {}
    for key, value in values.items():
        if key not in os.environ:
            os.environ[key] = str(value)
            exported[key] = str(value)
    return exported


_SETTING_EXPR = re.compile(r"%([A-Za-z0-9_.:-]+)%")


def resolve(expression: str, where: str) -> str:
    """Resolve ``%NAME%`` binding expressions from the environment."""

    def setting(match: re.Match[str]) -> str:
        name = match.group(1)
        value = os.environ.get(name)
        if value is None:
            raise HostError(
                f"{where}: app setting {name} is not set: add it to local.settings.json Values or"
                " the environment"
            )
        return value

    return _SETTING_EXPR.sub(setting, expression)
