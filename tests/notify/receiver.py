"""A webhook receiver on 127.0.0.1 for the notification tests: answers with the statuses it is
scripted with (then 200), and records each request's path, headers and body."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    port: int = 0
    statuses: list[int] = field(default_factory=list)
    """Answers to give, in order; 200 once they are used up (``always`` overrides)."""
    always: int | None = None
    requests: list[Received] = field(default_factory=list)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def receiver(*statuses: int, always: int | None = None) -> Iterator[Receiver]:
    """Run a receiver in a thread of its own for the ``with`` block."""
    state = Receiver(statuses=list(statuses), always=always)

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        state.requests.append(Received(request.path, dict(request.headers), body))
        status = state.always or (state.statuses.pop(0) if state.statuses else 200)
        return web.Response(status=status, text="ok" if status < 300 else "boom")

    ready = threading.Event()
    stopping: list[asyncio.Event] = []
    loop_of: list[asyncio.AbstractEventLoop] = []

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", hook)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        state.port = runner.addresses[0][1]
        stop = asyncio.Event()
        stopping.append(stop)
        loop_of.append(asyncio.get_running_loop())
        ready.set()
        await stop.wait()
        await runner.cleanup()

    # Its own thread and loop: the tests' loop may be blocked in a synchronous client call.
    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the webhook receiver did not start")
    try:
        yield state
    finally:
        loop_of[0].call_soon_threadsafe(stopping[0].set)
        thread.join(5)
