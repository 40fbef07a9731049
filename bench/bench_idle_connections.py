"""Requests after idle gaps, through a proxy whose server closes idle connections (issue #36).

A ``FlakyProxy`` (devtools/testing) in front of a fresh Azurite closes a connection that was idle at
least ``--server-idle-s`` as the next request goes out (the race a client meets when it reuses a
pooled connection the server has just timed out). A process makes ``--requests`` index inserts,
each after a ``--gap-s`` pause, once with aiohttp's default keep-alive (15 s) and once with dagq's
(``KEEPALIVE_S``), and reports how many requests met a closed connection (each repeated by the
adapter) and the slowest request.

Ends with ONE line of key=value pairs. Usage:
    python bench/bench_idle_connections.py [--requests 8] [--gap-s 5.5] [--server-idle-s 5]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shared.storage.azure.clients as clients
from devtools.azurite import Azurite
from devtools.testing.flaky_proxy import FlakyProxy
from shared.settings import Settings, azurite_connection_string
from shared.states import WorkflowStatus
from shared.storage.factory import ensure_resources, open_storage
from shared.storage.ports import IndexRow


async def run(table_port: int, other: tuple[int, int], keepalive_s: float, args: argparse.Namespace,
              prefix: str, key: str) -> tuple[int, float]:  # fmt: skip
    clients.KEEPALIVE_S = keepalive_s
    with FlakyProxy("127.0.0.1", table_port, idle_close_s=args.server_idle_s) as proxy:
        conn = azurite_connection_string(blob=other[0], queue=other[1], table=proxy.port, key=key)
        settings = Settings.model_validate({"DAGQ_STORAGE": conn, "DAGQ_PREFIX": prefix})
        slowest = 0.0
        async with open_storage(settings) as storage:
            await ensure_resources(storage)
            for i in range(args.requests):
                await asyncio.sleep(args.gap_s)
                start = time.perf_counter()
                row = IndexRow(f"wf{i}", "x", WorkflowStatus.PENDING, 1000.0 + i, 1000.0 + i)
                await storage.index.create(row)
                slowest = max(slowest, time.perf_counter() - start)
        return proxy.closed_before, slowest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--gap-s", type=float, default=5.5)
    parser.add_argument("--server-idle-s", type=float, default=5.0)
    args = parser.parse_args()
    dagq_keepalive = clients.KEEPALIVE_S
    with Azurite() as azurite:
        other = (azurite.bound["blob"], azurite.bound["queue"])
        table = azurite.bound["table"]
        closed_default, slow_default = asyncio.run(
            run(table, other, 15.0, args, "bidle1", azurite.key)
        )
        closed_dagq, slow_dagq = asyncio.run(
            run(table, other, dagq_keepalive, args, "bidle2", azurite.key)
        )
    print(
        f"requests={args.requests} gap_s={args.gap_s} server_idle_s={args.server_idle_s}"
        f" closed_keepalive_15s={closed_default} slowest_keepalive_15s_ms={slow_default * 1000:.1f}"
        f" closed_keepalive_{dagq_keepalive:g}s={closed_dagq}"
        f" slowest_keepalive_{dagq_keepalive:g}s_ms={slow_dagq * 1000:.1f}"
    )


if __name__ == "__main__":
    main()
