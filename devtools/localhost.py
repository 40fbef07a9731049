"""A local Azure Functions host for ``function_app.py``, for machines without Core Tools.

Where ``func`` (Azure Functions Core Tools) is on PATH this simply runs ``func start``. Elsewhere
(machines that cannot download Core Tools, CI) it loads the app through the azure-functions library
and runs its triggers the way the Functions host does, within reason:

- HTTP triggers are served by aiohttp on 127.0.0.1 (default port 7071) under host.json's
  ``routePrefix``; route templates like ``workflows/{id}`` are matched case-insensitively. Function
  keys are NOT enforced (``func start`` does not enforce them either).
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

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import importlib
import inspect
import json
import logging
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from devtools.instances import start_instances, stop_instances

log = logging.getLogger("dagq.localhost")

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PORT = 7071
RECEIVE_VISIBILITY_S = 60
"""Messages are received invisible for this long and renewed every third of it while running."""
MIN_POLL_S = 0.1
MAX_REQUEST_BYTES = 100 * 1024 * 1024
"""The Functions host's request size limit (100 MB); the app applies its own, lower limits."""


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


# -- discovery -------------------------------------------------------------------------------------


@dataclass
class Function:
    """One function of the app: its trigger binding and the user function."""

    name: str
    trigger: dict[str, Any]
    user_function: Callable[..., Any]

    @property
    def kind(self) -> str:
        return str(self.trigger["type"])

    @property
    def arg_name(self) -> str:
        return str(self.trigger["name"])

    async def invoke(self, argument: Any) -> Any:
        """Call the user function; a coroutine is awaited, a plain function runs in a thread
        (as the Python worker does)."""
        if inspect.iscoroutinefunction(self.user_function):
            return await self.user_function(**{self.arg_name: argument})
        result = await asyncio.to_thread(self.user_function, **{self.arg_name: argument})
        if inspect.isawaitable(result):
            return await result
        return result


def discover(app_dir: Path, module: str = "function_app") -> list[Function]:
    """Import the app module and list its functions (``get_functions`` is called once)."""
    if str(app_dir) not in sys.path:
        sys.path.insert(0, str(app_dir))
    mod = importlib.import_module(module)
    app = getattr(mod, "app", None)
    if app is None or not hasattr(app, "get_functions"):
        raise HostError(f"{module}.py defines no FunctionApp named 'app'")
    functions = []
    for f in app.get_functions():
        bindings = json.loads(f.get_function_json())["bindings"]
        trigger = next(b for b in bindings if str(b.get("type", "")).endswith("Trigger"))
        functions.append(Function(f.get_function_name(), trigger, f.get_user_function()))
    return functions


# -- HTTP ------------------------------------------------------------------------------------------


@dataclass
class Route:
    function: Function
    methods: frozenset[str]
    pattern: re.Pattern[str]
    template: str


def compile_route(template: str) -> re.Pattern[str]:
    """A route template (``workflows/{id}/tasks/{task}``) as a regex over the raw path."""
    parts = []
    for segment in template.strip("/").split("/"):
        match = re.fullmatch(r"\{(\*?)([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?(\??)\}", segment)
        if match:
            star, name, _optional = match.groups()
            parts.append(f"(?P<{name}>.+)" if star else f"(?P<{name}>[^/]+)")
        else:
            parts.append(re.escape(segment))
    return re.compile("/".join(parts), re.IGNORECASE)


def build_routes(functions: list[Function]) -> list[Route]:
    routes = []
    for f in functions:
        if f.kind != "httpTrigger":
            continue
        template = f.trigger.get("route") or f.name
        methods = frozenset(m.upper() for m in f.trigger.get("methods") or ["GET", "POST"])
        routes.append(Route(f, methods, compile_route(template), template))
    # Literal segments win over parameters, as in ASP.NET routing: try the most specific first.
    routes.sort(key=lambda r: (-r.template.count("/"), r.template.count("{")))
    return routes


def http_app(routes: list[Route], route_prefix: str) -> web.Application:
    """An aiohttp application dispatching every request to the matching HTTP function."""
    import azure.functions as func

    prefix = "/" + route_prefix if route_prefix else ""

    async def dispatch(request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        raw = request.raw_path.split("?", 1)[0]
        if not raw.lower().startswith(prefix.lower() + "/"):
            return web.Response(status=404)
        rest = raw[len(prefix) + 1 :]
        allowed: set[str] = set()
        for route in routes:
            match = route.pattern.fullmatch(rest)
            if not match:
                continue
            if request.method not in route.methods:
                allowed |= route.methods
                continue
            req = func.HttpRequest(
                request.method,
                str(request.url),
                headers=dict(request.headers),
                params={k: v for k, v in request.query.items()},
                route_params={k: unquote(v) for k, v in match.groupdict().items()},
                body=await request.read(),
            )
            try:
                result = await route.function.invoke(req)
            except Exception:
                log.exception("function %s failed", route.function.name)
                return web.Response(status=500)
            response = _to_aiohttp(result)
            log.info(
                "%s %s -> %s (%s, %.0f ms)", request.method, raw, response.status,
                route.function.name, (time.monotonic() - started) * 1000,
            )  # fmt: skip
            return response
        if allowed:
            return web.Response(status=405, headers={"Allow": ", ".join(sorted(allowed))})
        return web.Response(status=404)

    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    # Every path reaches dispatch, also one whose decoded form has a newline (which ".*" would not
    # match, leaving aiohttp to answer a text/plain 404 the app never sees).
    app.router.add_route("*", r"/{tail:[\s\S]*}", dispatch)
    return app


def _to_aiohttp(result: Any) -> web.Response:
    import azure.functions as func

    if not isinstance(result, func.HttpResponse):
        log.error("an HTTP function returned %s instead of an HttpResponse", type(result).__name__)
        return web.Response(status=500)
    headers = dict(result.headers)
    if result.mimetype and not any(k.lower() == "content-type" for k in headers):
        headers["Content-Type"] = f"{result.mimetype}; charset={result.charset or 'utf-8'}"
    return web.Response(status=result.status_code, headers=headers, body=result.get_body())


# -- queues ----------------------------------------------------------------------------------------


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
                    await _sleep_unless(stopping, delay)
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
            await _quietly(renewer)
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
        await _quietly(renewer)
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


# -- timers ----------------------------------------------------------------------------------------


class TimerSchedule:
    """Next occurrences of an NCRONTAB expression (seconds first) or an hh:mm:ss interval."""

    def __init__(self, expression: str, start: float) -> None:
        self.expression = expression
        self.interval: float | None = None
        if re.fullmatch(r"(?:\d+\.)?\d+:\d+:\d+", expression.strip()):
            self.interval = parse_timespan(expression)
            self._next = start + self.interval
            return
        from croniter import croniter

        if len(expression.split()) != 6:
            raise HostError(
                f"timer schedule {expression!r}: use six NCRONTAB fields, seconds first"
                " ('*/5 * * * * *')"
            )
        try:
            self._cron = croniter(
                expression, datetime.fromtimestamp(start, UTC), second_at_beginning=True
            )
        except (ValueError, KeyError) as exc:
            raise HostError(f"invalid timer schedule {expression!r}: {exc}") from None

    def next_after(self, now: float) -> float:
        """The first occurrence after ``now`` (occurrences missed meanwhile are skipped)."""
        if self.interval is not None:
            while self._next <= now:
                self._next += self.interval
            return self._next
        while True:
            value = float(self._cron.get_next(float))
            if value > now:
                return value


class TimerRunner:
    """Fires one timer-triggered function on its schedule, never two executions at once."""

    def __init__(self, function: Function) -> None:
        self.function = function
        expression = resolve(str(function.trigger["schedule"]), f"function {function.name}")
        self.schedule = TimerSchedule(expression, time.time())
        self.run_on_startup = bool(function.trigger.get("runOnStartup"))

    async def run(self, stopping: asyncio.Event) -> None:
        if self.run_on_startup:
            await self._fire(past_due=False)
        due = self.schedule.next_after(time.time())
        while not stopping.is_set():
            await _sleep_unless(stopping, max(0.0, due - time.time()))
            if stopping.is_set():
                return
            late = time.time() - due
            await self._fire(past_due=late > 1.0)
            due = self.schedule.next_after(time.time())

    async def _fire(self, *, past_due: bool) -> None:
        from azure.functions.timer import TimerRequest

        try:
            await self.function.invoke(TimerRequest(past_due=past_due))
        except Exception:
            log.exception("timer function %s failed", self.function.name)


# -- the host --------------------------------------------------------------------------------------


async def _sleep_unless(stopping: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), timeout=seconds)


async def _quietly(task: asyncio.Task[Any]) -> None:
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


@dataclass
class HostOptions:
    app_dir: Path = REPO_ROOT
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    queues: bool = True
    timers: bool = True
    grace_s: float = 30.0


async def serve(options: HostOptions, stopping: asyncio.Event | None = None) -> None:
    """Run the app until ``stopping`` is set (or SIGTERM/SIGINT)."""
    stopping = stopping or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stopping.set)
    config = load_host_config(options.app_dir)
    functions = discover(options.app_dir)
    routes = build_routes(functions)
    listeners = [
        QueueListener(f, config.queues)
        for f in functions
        if f.kind == "queueTrigger" and options.queues
    ]
    timers = [TimerRunner(f) for f in functions if f.kind == "timerTrigger" and options.timers]

    runner = web.AppRunner(http_app(routes, config.route_prefix), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, options.host, options.port)
    await site.start()
    port = runner.addresses[0][1] if runner.addresses else options.port
    for f in functions:
        detail = f.trigger.get("route") or f.trigger.get("queueName") or f.trigger.get("schedule")
        log.info("function %s: %s %s", f.name, f.kind, detail)
    runners: list[QueueListener | TimerRunner] = [*listeners, *timers]
    background = [asyncio.create_task(x.run(stopping)) for x in runners]
    # The line tools wait for (devtools.stack, tests): the API is being served from here on.
    print(f"dagq local host listening on http://{options.host}:{port}/{config.route_prefix}",
          flush=True)  # fmt: skip
    try:
        waiter = asyncio.create_task(stopping.wait())
        done, _ = await asyncio.wait([waiter, *background], return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not waiter and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    finally:
        stopping.set()
        log.info("shutting down")
        await runner.shutdown()
        for listener in listeners:
            await listener.drain(options.grace_s)
        for task in background:
            task.cancel()
            await _quietly(task)
        await runner.cleanup()
        await _close_app_context()


async def _close_app_context() -> None:
    """Give up the app's coordinator leases and close its storage clients, if it keeps them in
    shared.api.triggers and shared.api.context (dagq's app)."""
    triggers = getattr(sys.modules.get("shared.api.triggers"), "close", None)
    if triggers is not None:
        with contextlib.suppress(Exception):
            await triggers()
    module = sys.modules.get("shared.api.context")
    context = getattr(module, "CONTEXT", None)
    if context is not None:
        with contextlib.suppress(Exception):
            await context.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.localhost",
        description="Run function_app.py locally: `func start` when Core Tools are installed, else"
        " a built-in host that serves HTTP triggers, polls queue triggers and fires timers with"
        " host.json semantics.",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help="HTTP port (default 7071; 0 picks a free one)")  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--app-dir", type=Path, default=REPO_ROOT,
                        help="folder of function_app.py and host.json (default: repo)")  # fmt: skip
    parser.add_argument("--settings", type=Path, default=None,
                        help="local.settings.json whose Values are exported when not already in"
                        " the environment (default: APP_DIR/local.settings.json)")  # fmt: skip
    parser.add_argument("--builtin", action="store_true",
                        help="use the built-in host even when `func` is installed")  # fmt: skip
    parser.add_argument("--no-queues", action="store_true", help="do not poll queue triggers")
    parser.add_argument("--no-timers", action="store_true", help="do not fire timer triggers")
    parser.add_argument("--grace-s", type=float, default=30.0,
                        help="time running invocations get on shutdown (default 30)")  # fmt: skip
    parser.add_argument(
        "--instances", type=int, default=1, metavar="N",
        help="run N instances of the app (separate processes, one storage) as Functions scales"
        " out; the others poll the queue triggers only",
    )  # fmt: skip
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    args = parser.parse_args(argv)
    if args.instances < 1:
        parser.error("--instances must be at least 1")
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # The SDKs log every request and response at INFO: only their warnings are worth reading.
    logging.getLogger("azure").setLevel(max(logging.WARNING, logging.getLogger().level))
    app_dir = args.app_dir.resolve()
    func_cli = shutil.which("func")
    if func_cli and not args.builtin:
        os.chdir(app_dir)
        command = [func_cli, "start", "--port", str(args.port or DEFAULT_PORT)]
        os.execv(func_cli, command)  # noqa: S606 - becoming `func start` is the point
    try:
        load_local_settings(args.settings or app_dir / "local.settings.json")
        options = HostOptions(
            app_dir=app_dir, host=args.host, port=args.port, queues=not args.no_queues,
            timers=not args.no_timers, grace_s=args.grace_s,
        )  # fmt: skip
        others = start_instances(args.instances - 1, app_dir, args.settings)
        try:
            asyncio.run(serve(options))
        finally:
            stop_instances(others, args.grace_s)
    except HostError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # typically: the port is taken
        print(f"error: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
