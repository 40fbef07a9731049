"""A TCP proxy on 127.0.0.1 that adds a fixed delay to every request: Azure's latency over Azurite.

Every byte a client sends is held ``delay_ms`` before it is forwarded to the target; the answers
come back at once. So each HTTP request pays the delay once (one round trip to Azure Storage is
5-20 ms, docs/capacity.md), and requests are not serialised by it: each chunk is due at its own
arrival time plus the delay, so requests pipelined on one connection, or sent on many connections
at once, are all delayed together, not one after another.

``python bench/latency_proxy.py --delay-ms 10 PORT [PORT ...]`` listens on a free port for each
target port and prints ``listening <proxy port> -> <target port>`` for each, then ``ready``; the
benchmarks start it as a process of its own (``proxied``) so that the delay does not depend on how
busy the benchmark's own event loop is.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
CHUNK = 65536


@dataclass
class Held:
    """Chunks received but not forwarded yet, now and at most (pipelining shows as most > 1)."""

    now: int = 0
    most: int = 0

    def hold(self) -> None:
        self.now += 1
        self.most = max(self.most, self.now)

    def release(self) -> None:
        self.now -= 1


@dataclass
class LatencyProxy:
    """Listens on a free port of 127.0.0.1 and forwards to ``target_port``, every client chunk
    held ``delay_s`` (measured from its arrival) before it is written to the target."""

    target_port: int
    delay_s: float
    held: Held = field(default_factory=Held)
    port: int = 0
    _server: asyncio.Server | None = None
    _connections: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, HOST, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            target_r, target_w = await asyncio.open_connection(HOST, self.target_port)
        except OSError:
            client_w.close()
            self._connections.discard(task)
            return
        pipes: list[asyncio.Task[None]] = []
        try:
            # Either direction ending ends the connection (HTTP keep-alive: the client closes).
            pipes = [asyncio.create_task(self._delayed(client_r, target_w)),
                     asyncio.create_task(_copy(target_r, client_w))]  # fmt: skip
            _, pending = await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            for pipe in pending:
                pipe.cancel()
            await asyncio.gather(*pipes, return_exceptions=True)
        except asyncio.CancelledError:  # the proxy closes: end quietly (asyncio logs a cancel)
            for pipe in pipes:
                pipe.cancel()
        finally:
            for writer in (client_w, target_w):
                writer.close()
            self._connections.discard(task)

    async def _delayed(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        due: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

        async def forward() -> None:
            # In arrival order; every chunk waits only for its own due time, so a chunk that
            # arrived while another was held is not delayed twice.
            while (item := await due.get()) is not None:
                at, data = item
                if (wait := at - loop.time()) > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                self.held.release()
                await writer.drain()

        forwarder = asyncio.create_task(forward())
        try:
            while data := await reader.read(CHUNK):
                self.held.hold()
                due.put_nowait((loop.time() + self.delay_s, data))
            due.put_nowait(None)
            await forwarder
        finally:
            forwarder.cancel()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(CHUNK):
        writer.write(data)
        await writer.drain()


def proxied_connection_string(conn: str, ports: dict[int, int]) -> str:
    """``conn`` with each endpoint's ``127.0.0.1:<port>`` replaced by its proxy's port."""

    def swap(match: re.Match[str]) -> str:
        return f"{HOST}:{ports.get(int(match.group(1)), match.group(1))}"

    return re.sub(rf"{re.escape(HOST)}:(\d+)", swap, conn)


def endpoint_ports(conn: str) -> list[int]:
    return sorted({int(p) for p in re.findall(rf"{re.escape(HOST)}:(\d+)", conn)})


@contextlib.contextmanager
def proxied(conn: str, delay_ms: float) -> Iterator[str]:
    """Starts the proxy process in front of every endpoint of ``conn`` (an Azurite connection
    string) and yields the connection string that goes through it; stops it on exit."""
    targets = endpoint_ports(conn)
    command = [sys.executable, str(Path(__file__).resolve()), "--delay-ms", str(delay_ms)]
    proc = subprocess.Popen([*command, *map(str, targets)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ports: dict[int, int] = {}
        for line in proc.stdout:
            if line.startswith("listening"):
                _, mine, _, target = line.split()
                ports[int(target)] = int(mine)
            elif line.startswith("ready"):
                break
        if len(ports) != len(targets):
            raise RuntimeError(f"the latency proxy did not start (ports {ports})")
        yield proxied_connection_string(conn, ports)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _main(delay_ms: float, targets: list[int]) -> None:
    proxies = [LatencyProxy(t, delay_ms / 1000) for t in targets]
    for proxy in proxies:
        print(f"listening {await proxy.start()} -> {proxy.target_port}", flush=True)
    print("ready", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await asyncio.gather(*(p.close() for p in proxies))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("ports", type=int, nargs="+", help="target ports on 127.0.0.1")
    args = parser.parse_args()
    asyncio.run(_main(args.delay_ms, args.ports))
