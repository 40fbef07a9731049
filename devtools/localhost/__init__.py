"""A local Azure Functions host for ``function_app.py``, for machines without Core Tools.

Where ``func`` (Azure Functions Core Tools) is on PATH this simply runs ``func start``. Elsewhere
(machines that cannot download Core Tools, CI) it loads the app through the azure-functions library
and runs its triggers the way the Functions host does, within reason:

- HTTP triggers are served by aiohttp on 127.0.0.1 (default port 7071) under host.json's
  ``routePrefix``; route templates like ``workflows/{id}`` are matched case-insensitively. Function
  keys are NOT enforced (``func start`` does not enforce them either); instead a request must name
  a loopback Host and come from no other site (no foreign Origin): ``origin.py``.
- Queue triggers are polled with host.json's ``extensions.queues`` semantics: ``batchSize``,
  ``newBatchThreshold``, ``maxPollingInterval`` (exponential back-off from 100 ms while idle),
  ``visibilityTimeout`` (the delay before a failed message is retried), ``maxDequeueCount`` (then
  the message moves to ``<queue>-poison``) and ``messageEncoding`` (``base64`` or ``none``).
  Messages are received invisible for a while, renewed while their function runs, deleted on
  success.
- Timer triggers fire on their NCRONTAB schedule (six fields, seconds first; or an ``hh:mm:ss``
  interval), one execution at a time, ``runOnStartup`` honoured.
- ``%NAME%`` binding expressions resolve from the environment, then local.settings.json ``Values``
  (which are also exported to the environment when not already set: the environment wins).

SIGTERM/SIGINT stop it gracefully: no new requests or messages; running invocations may finish
(up to ``--grace-s``). A development tool: it is excluded from deployment (.funcignore).
"""

from devtools.localhost.app import Function, discover
from devtools.localhost.cli import main
from devtools.localhost.config import (
    DEFAULT_PORT,
    REPO_ROOT,
    HostConfig,
    HostError,
    QueueOptions,
    load_host_config,
    load_local_settings,
    parse_timespan,
    resolve,
)
from devtools.localhost.host import HostOptions, serve
from devtools.localhost.http_trigger import Route, build_routes, compile_route, http_app
from devtools.localhost.queue_trigger import QueueListener
from devtools.localhost.timer_trigger import TimerRunner, TimerSchedule

__all__ = [
    "DEFAULT_PORT",
    "REPO_ROOT",
    "Function",
    "HostConfig",
    "HostError",
    "HostOptions",
    "QueueListener",
    "QueueOptions",
    "Route",
    "TimerRunner",
    "TimerSchedule",
    "build_routes",
    "compile_route",
    "discover",
    "http_app",
    "load_host_config",
    "load_local_settings",
    "main",
    "parse_timespan",
    "resolve",
    "serve",
]
