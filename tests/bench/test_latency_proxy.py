"""The benchmarks' latency proxy (bench/latency_proxy.py): +D per request, pipelined requests not
serialised, and transparent to the storage SDK (a queue round trip on Azurite through it).

The delay is a lower bound the proxy guarantees (a chunk is never forwarded before its due time),
so those checks hold on any machine; the pipelining check compares the spread of arrivals at the
server with the spread of the sends, with a margin of 1.5 delays (a serialising proxy spreads
five requests by four delays, four connections' requests by three).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from bench.latency_proxy import LatencyProxy, endpoint_ports, proxied, proxied_connection_string
from devtools.azurite import Azurite
from shared.settings import Settings
from shared.storage.factory import open_storage

DELAY_S = 0.5
JITTER_S = 1.5 * DELAY_S
"""Room for a loaded machine's scheduling: a serialising proxy spreads N requests by N-1 delays."""


async def line_server(arrivals: list[tuple[bytes, float]]) -> asyncio.Server:
    """Answers each line at once, noting when it arrived."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            arrivals.append((line, time.monotonic()))
            writer.write(b"re " + line)
            await writer.drain()
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


async def test_each_request_is_delayed_and_pipelined_ones_together() -> None:
    arrivals: list[tuple[bytes, float]] = []
    server = await line_server(arrivals)
    proxy = LatencyProxy(server.sockets[0].getsockname()[1], DELAY_S)
    port = await proxy.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        # One request: its answer comes at least the delay after it was sent.
        sent = time.monotonic()
        writer.write(b"alone\n")
        await writer.drain()
        assert await reader.readline() == b"re alone\n"
        assert time.monotonic() - sent >= DELAY_S
        # Five pipelined on the same connection (separate writes, before any answer).
        sends: list[float] = []
        for i in range(5):
            sends.append(time.monotonic())
            writer.write(f"p{i}\n".encode())
            await writer.drain()
            await asyncio.sleep(0.01)
        answers = [await reader.readline() for _ in range(5)]
        assert answers == [f"re p{i}\n".encode() for i in range(5)]  # in order
        piped = [at for line, at in arrivals if line.startswith(b"p")]
        assert all(at - s >= DELAY_S for at, s in zip(piped, sends, strict=True))
        assert piped[-1] - piped[0] < sends[-1] - sends[0] + JITTER_S, "serialised"
        assert proxy.held.most >= 2
        writer.close()
    finally:
        await proxy.close()
        server.close()


async def test_connections_are_delayed_independently() -> None:
    arrivals: list[tuple[bytes, float]] = []
    server = await line_server(arrivals)
    proxy = LatencyProxy(server.sockets[0].getsockname()[1], DELAY_S)
    port = await proxy.start()
    try:
        conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(4)]
        start = time.monotonic()
        for i, (_, writer) in enumerate(conns):
            writer.write(f"c{i}\n".encode())
        await asyncio.gather(*(w.drain() for _, w in conns))
        sent = time.monotonic()
        replies = await asyncio.gather(*(r.readline() for r, _ in conns))
        assert sorted(replies) == [f"re c{i}\n".encode() for i in range(4)]
        times = [at for _, at in arrivals]
        assert min(times) - start >= DELAY_S
        assert max(times) - min(times) < sent - start + JITTER_S, "serialised"
        for _, writer in conns:
            writer.close()
    finally:
        await proxy.close()
        server.close()


def test_connection_string_points_at_the_proxy() -> None:
    text = "BlobEndpoint=http://127.0.0.1:1000/a;QueueEndpoint=http://127.0.0.1:1001/a;"
    assert endpoint_ports(text) == [1000, 1001]
    assert proxied_connection_string(text, {1000: 2000, 1001: 2001}) == (
        "BlobEndpoint=http://127.0.0.1:2000/a;QueueEndpoint=http://127.0.0.1:2001/a;"
    )


@pytest.mark.azurite
async def test_storage_works_through_the_proxy_process(azurite: Azurite, prefix: str) -> None:
    with proxied(azurite.connection_string, delay_ms=50) as conn:
        assert endpoint_ports(conn) != endpoint_ports(azurite.connection_string)
        settings = Settings.model_validate({"DAGQ_STORAGE": conn, "DAGQ_PREFIX": prefix})
        async with open_storage(settings) as storage:
            queue = storage.queues.get(f"{prefix}-lat")
            await queue.ensure()
            start = time.monotonic()
            await queue.send("hello")
            assert time.monotonic() - start >= 0.05
            (message,) = await queue.receive(1, 30)
            assert message.text == "hello"
            await queue.delete(message)
