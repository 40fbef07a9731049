"""Hop latency on the local stack: how long after a parent finishes its child is running.

Starts the stack ``make up`` starts (Azurite, the Functions app on the built-in local host with the
repository's host.json, cpu/gpu worker agents with their default polling), in a temporary run
directory on free ports, and submits ``--chains`` workflows that are each a chain of ``--length``
tasks alternating between the ``cpu`` and ``gpu`` queues (CPU prep -> GPU train -> CPU evaluate),
every chain starting on ``cpu``: the worker that must start a child has been idle for the whole of
its parent's run, and so has the coordinator's queue trigger, so both poll as idle ones do in
production. Each worker has a slot per chain, so no hop waits for a busy slot. Task durations
vary (``--sleep`` seconds and up to 10 s more) so the hops land at every phase of the idle
polling's back-off. A hop is the child's ``started_at`` minus its parent's
``finished_at`` (both stamped by the workers).

With ``BENCH_LATENCY_MS=D`` runs without and with the stack's every storage request delayed D ms
(bench/latency_proxy.py between Azurite and the app and workers) alternate for ``--rounds`` rounds
(3), each on a fresh stack, and the line adds hop_p50_ms_latD, hop_p95_ms_latD,
hop_p50_latD_delta_ms (the p50 of all hops at +D minus the p50 of all hops without) and
hop_p50_latD_delta_lo_ms / _hi_ms, a 90 % bootstrap interval of that difference: a hop waits on
polls at random phases, so only many hops tell a few round trips from the polls' spread.

Ends with ONE line of key=value pairs (hops, hop_p50_ms, hop_p95_ms, hop_max_ms).
Usage: python bench/bench_hops.py [--chains 8] [--length 7] [--sleep 6] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def chain(length: int, sleep_s: float, number: int = 0) -> dict[str, Any]:
    """Chain ``number``'s tasks: durations differ from chain to chain (by a fraction of a second
    too), so the chains' hops fall at different times, each at its own phase of the polls."""
    queues = ("cpu", "gpu")
    offset = (number * 0.37) % 1.0
    tasks = [
        {
            "name": f"t{i}",
            "kwargs": {"cmd": f"sleep {sleep_s + (i * 7 + number * 3) % 5 * 2.5 + offset:.2f}"},
            "queue": queues[i % 2],
        }
        | ({"depends_on": [f"t{i - 1}"]} if i else {})
        for i in range(length)
    ]
    return {"name": "hops", "tasks": tasks}


def call(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def wait_done(api: str, ids: list[str], timeout_s: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        views = [call("GET", f"{api}/workflows/{wid}") for wid in ids]
        if all(v["status"] in ("completed", "failed", "cancelled") for v in views):
            return views
        if time.monotonic() > deadline:
            raise SystemExit(f"workflows did not finish within {timeout_s:.0f} s")
        time.sleep(0.5)


def hops_of(view: dict[str, Any], length: int) -> list[float]:
    tasks = view["tasks"]
    return [
        tasks[f"t{i}"]["started_at"] - tasks[f"t{i - 1}"]["finished_at"] for i in range(1, length)
    ]


def halves_of(view: dict[str, Any], length: int) -> list[tuple[float, float]]:
    """Each hop in two: parent finished -> child queued (the report reaching the coordinator and
    its pass: ``queued_at`` is the coordinator's clock when it dispatched), child queued -> child
    started (the send, the worker's poll, receive, claim, check)."""
    tasks = view["tasks"]
    return [
        (tasks[f"t{i}"]["queued_at"] - tasks[f"t{i - 1}"]["finished_at"],
         tasks[f"t{i}"]["started_at"] - tasks[f"t{i}"]["queued_at"])
        for i in range(1, length)
    ]  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def through_proxy(latency_ms: float) -> Callable[[], None]:
    """Makes the stack's Azurite answer through the latency proxy; returns the undo."""
    from bench.latency_proxy import proxied
    from devtools import stack

    original = stack.start_azurite
    exits = contextlib.ExitStack()

    def start_azurite(env: dict[str, str], any_ports: bool = False, timeout_s: float = 30.0
                      ) -> tuple[Any, str]:  # fmt: skip
        proc, conn = original(env, any_ports, timeout_s)
        return proc, exits.enter_context(proxied(conn, latency_ms))

    stack.start_azurite = start_azurite  # type: ignore[assignment]

    def undo() -> None:
        stack.start_azurite = original  # type: ignore[assignment]
        exits.close()

    return undo


def run(chains: int, length: int, sleep_s: float, latency_ms: float = 0) -> list[float]:
    from devtools import stack

    run_dir = stack.RUN_DIR
    shutil.rmtree(run_dir / "azurite", ignore_errors=True)  # each run on an empty emulator
    undo = through_proxy(latency_ms) if latency_ms else (lambda: None)
    try:
        slots = dict(stack.WORKER_QUEUES)
        stack.WORKER_QUEUES.update({queue: max(n, chains) for queue, n in slots.items()})
        try:
            started = stack.up("h" + uuid.uuid4().hex[:8], any_ports=True)
        finally:
            stack.WORKER_QUEUES.update(slots)
    except BaseException:
        undo()
        raise
    try:
        time.sleep(3.0)  # let the workers and the trigger settle into their idle polling
        # Every chain is on the same queue at the same time, each with a slot of its own.
        ids = [call("POST", f"{started.api_url}/workflows", chain(length, sleep_s, n))["id"]
               for n in range(chains)]  # fmt: skip
        views = wait_done(started.api_url, ids, timeout_s=length * (sleep_s + 30))
    finally:
        stack.down(quiet=True)
        undo()
    failed = [v["id"] for v in views if v["status"] != "completed"]
    if failed:
        raise SystemExit(f"workflows did not complete: {failed} (logs in {run_dir})")
    hops = [hop for view in views for hop in hops_of(view, length)]
    halves = [half for view in views for half in halves_of(view, length)]
    p50, p95 = percentile(hops, 0.5), percentile(hops, 0.95)
    to_queued = percentile([a for a, _ in halves], 0.5) * 1000
    to_started = percentile([b for _, b in halves], 0.5) * 1000
    extra = f" at +{latency_ms:g} ms per request" if latency_ms else ""
    print(f"{len(hops)} hops over {chains} chains of {length} tasks ({sleep_s}-{sleep_s + 10} s)"
          f"{extra}")  # fmt: skip
    print(f"mean {statistics.mean(hops) * 1000:.0f} ms, p50 {p50 * 1000:.0f} ms, "
          f"p95 {p95 * 1000:.0f} ms, max {max(hops) * 1000:.0f} ms; p50 finished -> queued "
          f"{to_queued:.0f} ms, queued -> started {to_started:.0f} ms", flush=True)  # fmt: skip
    return hops


def delta_interval(plain: list[float], slow: list[float], draws: int = 2000) -> tuple[float, float]:
    """A 90 % bootstrap interval of p50(slow) - p50(plain), in seconds (a fixed seed)."""
    rng = random.Random(32)
    deltas = sorted(
        percentile(rng.choices(slow, k=len(slow)), 0.5)
        - percentile(rng.choices(plain, k=len(plain)), 0.5)
        for _ in range(draws)
    )
    return deltas[int(0.05 * draws)], deltas[int(0.95 * draws)]


def main(chains: int, length: int, sleep_s: float, rounds: int) -> None:
    os.environ["DAGQ_RUN_DIR"] = tempfile.mkdtemp(prefix="dagq-hops-")
    os.environ["DAGQ_WORKER_METADATA_URL"] = ""  # no Scheduled Events off a VM: 127.0.0.1 only
    latency_ms = float(os.environ.get("BENCH_LATENCY_MS") or 0)
    hops: list[float] = []
    slow: list[float] = []
    for _ in range(rounds if latency_ms else 1):  # alternating: drift hits both alike
        hops += run(chains, length, sleep_s)
        if latency_ms:
            slow += run(chains, length, sleep_s, latency_ms)
    p50, p95 = percentile(hops, 0.5), percentile(hops, 0.95)
    line = (
        f"hops={len(hops)} hop_p50_ms={p50 * 1000:.0f} hop_p95_ms={p95 * 1000:.0f} "
        f"hop_max_ms={max(hops) * 1000:.0f}"
    )
    if latency_ms:
        tag = f"_lat{latency_ms:g}"
        slow_p50 = percentile(slow, 0.5)
        low, high = delta_interval(hops, slow)
        line += (
            f" hop_p50_ms{tag}={slow_p50 * 1000:.0f}"
            f" hop_p95_ms{tag}={percentile(slow, 0.95) * 1000:.0f}"
            f" hop_p50{tag}_delta_ms={(slow_p50 - p50) * 1000:.0f}"
            f" hop_p50{tag}_delta_lo_ms={low * 1000:.0f} hop_p50{tag}_delta_hi_ms={high * 1000:.0f}"
        )
    print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=8, choices=range(1, 17), metavar="1..16")
    parser.add_argument("--length", type=int, default=7)
    parser.add_argument(
        "--sleep",
        type=float,
        default=6.0,
        help="shortest task duration in seconds (tasks run this long and up to 10 s more)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="with BENCH_LATENCY_MS: alternating runs without and with the delay",
    )
    args = parser.parse_args()
    main(args.chains, args.length, args.sleep, args.rounds)
