"""The built-in host: the app's HTTP, queue and timer triggers, run until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from devtools.localhost.app import discover
from devtools.localhost.config import DEFAULT_PORT, REPO_ROOT, load_host_config
from devtools.localhost.http_trigger import build_routes, http_app
from devtools.localhost.queue_trigger import QueueListener
from devtools.localhost.timer_trigger import TimerRunner
from devtools.localhost.waits import quietly

log = logging.getLogger("dagq.localhost")


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
            await quietly(task)
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
