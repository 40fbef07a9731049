"""A TCP proxy on 127.0.0.1 that closes HTTP/1.1 connections the way servers and load balancers do.

    with FlakyProxy("127.0.0.1", azurite_port, idle_close_s=2.0) as proxy:
        ... point the client at proxy.port ...

Each client connection gets its own upstream connection (keep-alive is mirrored one to one). The
proxy tells requests apart without parsing HTTP: a client that does not pipeline (aiohttp, httpx)
sends a request only after it read the previous answer, so client bytes that arrive after the
server's bytes (or first on a connection) begin a new request. Requests are numbered from 1 across
every connection.

Faults, all deterministic:

- ``idle_close_s``: a request on a connection that was idle at least that long is not forwarded;
  the connection is closed instead (the server closed it "just as the request went out": what a
  client meets when it reuses a pooled connection the server has timed out).
- ``close_before``: request numbers closed the same way (never reaching the server).
- ``every_before`` / ``every_after``: every n-th request closed before or after (0: none);
  ``spare_after(first bytes)`` exempts requests from being closed after.
- ``close_after``: request numbers forwarded to the server, which acts on them; the connection is
  closed as the server's answer starts, so the client never sees it (a reply lost with the
  connection).

``requests``, ``closed_before`` and ``closed_after`` count what happened; ``connections`` counts
client connections accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterable


class FlakyProxy:
    """The proxy, run on an event loop of its own in a daemon thread."""

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        *,
        idle_close_s: float | None = None,
        close_before: Iterable[int] = (),
        close_after: Iterable[int] = (),
        every_before: int = 0,
        every_after: int = 0,
        spare_after: Callable[[bytes], bool] = lambda _head: False,
    ) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.idle_close_s = idle_close_s
        self.close_before = set(close_before)
        self.close_after = set(close_after)
        self.every_before = every_before
        self.every_after = every_after
        self.spare_after = spare_after
        """Requests (by their first bytes) never closed after they reached the server."""
        self.requests = 0
        self.closed_before = 0
        self.closed_after = 0
        self.connections = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._lock = threading.Lock()

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> FlakyProxy:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        future.result(timeout=10)
        return self

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> FlakyProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- one connection --------------------------------------------------------------------------

    def arm(self, *, after: bool) -> None:
        """Close the next request, after it reached the server or before."""
        (self.close_after if after else self.close_before).add(self.requests + 1)

    def _number(self) -> int:
        with self._lock:
            self.requests += 1
            return self.requests

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            upstream_r, upstream_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_w.close()
            return
        state = {"answering": True, "last": time.monotonic(), "drop": False}
        done = asyncio.Event()

        async def client_to_server() -> None:
            while chunk := await client_r.read(65536):
                now = time.monotonic()
                if state["answering"]:  # a new request begins
                    number = self._number()
                    idle = now - float(state["last"])
                    stale = self.idle_close_s is not None and idle >= self.idle_close_s
                    every = self.every_before and number % self.every_before == 0
                    if stale or every or number in self.close_before:
                        self.closed_before += 1
                        return
                    after = self.every_after and number % self.every_after == 0
                    drop = after or number in self.close_after
                    state["drop"] = bool(drop) and not self.spare_after(chunk)
                    state["answering"] = False
                state["last"] = now
                upstream_w.write(chunk)
                await upstream_w.drain()

        async def server_to_client() -> None:
            while chunk := await upstream_r.read(65536):
                if state["drop"]:  # the server acted on it: the answer is lost with the connection
                    self.closed_after += 1
                    return
                state["answering"] = True
                state["last"] = time.monotonic()
                client_w.write(chunk)
                await client_w.drain()

        async def run(part: asyncio.Future[None] | asyncio.Task[None]) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                await part
            done.set()

        tasks = [
            asyncio.ensure_future(run(asyncio.ensure_future(client_to_server()))),
            asyncio.ensure_future(run(asyncio.ensure_future(server_to_client()))),
        ]
        try:
            await done.wait()
        finally:
            for task in tasks:
                task.cancel()
            for writer in (client_w, upstream_w):
                with contextlib.suppress(Exception):
                    writer.transport.abort()
