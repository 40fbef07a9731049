"""``python -m sim``: run seeds of the deterministic simulation (docs/simulation.md).

    python -m sim --seeds 500            # seeds 0..499 on every core; exit 1 if any fails
    python -m sim --seed 1234 --trace    # replay one seed and print its whole trace
    python -m sim --seed 7 --tooth no-if-match   # a planted bug: this seed must fail
    python -m sim --soak 60              # as many seeds as fit in 60 s, from a rotating start

A failing seed prints its violations, the end of its trace (the interleaving that broke the
invariant) and a one-line replay command. String hashing is pinned (PYTHONHASHSEED=0: the
process re-executes itself if it is not), so a seed replays byte for byte in any process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from sim.faults import Tooth
from sim.world import simulate

TRACE_TAIL = 60
"""Trace lines printed for a failing seed (``--trace`` prints all)."""


def _one(job: tuple[int, tuple[str, ...]]) -> tuple[int, list[str], list[str], str]:
    seed, teeth = job
    outcome = simulate(seed, teeth=frozenset(Tooth(t) for t in teeth))
    return seed, outcome.violations, outcome.trace[-TRACE_TAIL:], outcome.digest


def replay_command(seed: int, teeth: Sequence[str]) -> str:
    """The one line that replays ``seed`` exactly."""
    extra = "".join(f" --tooth {t}" for t in teeth)
    return f"PYTHONHASHSEED=0 python -m sim --seed {seed}{extra} --trace"


SOAK_SPAN = 10_000_000
"""Soak runs start somewhere in seeds 0..SOAK_SPAN-1, a new place every minute."""


def soak_start(now: float) -> int:
    """The first seed of a soak run started at ``now`` (seconds): a new stretch every minute,
    far from the seeds ``make sim`` and the test suite run."""
    return 1_000_000 + (int(now) // 60 * 7919) % SOAK_SPAN


def _report(seed: int, violations: list[str], tail: list[str], teeth: Sequence[str]) -> None:
    print(f"\nseed {seed} FAILED:")
    print("\n".join(f"  {line}" for line in tail))
    for violation in violations:
        print(f"  ! {violation}")
    print(f"  replay: {replay_command(seed, teeth)}", flush=True)


def soak(seconds: float, first: int, jobs: int, teeth: Sequence[str]) -> int:
    """Run seeds ``first``, ``first + 1``, ... until ``seconds`` have passed (each seed started
    runs to its end); exit 1 if any failed. The start is printed first: a failure replays from
    its seed alone, the whole run from ``--soak S --first N``."""
    print(f"soak: {seconds:g} s of seeds from {first}"
          f" (again: python -m sim --soak {seconds:g} --first {first})", flush=True)  # fmt: skip
    deadline = time.monotonic() + seconds
    ran = failed = 0
    following = first
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        pending: set[Future[tuple[int, list[str], list[str], str]]] = set()
        while True:
            while len(pending) < 2 * max(1, jobs) and time.monotonic() < deadline:
                pending.add(pool.submit(_one, (following, tuple(teeth))))
                following += 1
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                seed, violations, tail, _digest = future.result()
                ran += 1
                if violations:
                    failed += 1
                    _report(seed, violations, tail, teeth)
    print(f"soak: {ran - failed}/{ran} seeds passed (seeds {first}..{following - 1})")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=200, help="how many seeds (default 200)")
    parser.add_argument("--first", type=int, help="the first seed (default 0; --soak: rotating)")
    parser.add_argument(
        "--soak",
        type=float,
        metavar="SECONDS",
        help="run seeds for this long from --first (default: a rotating start)",
    )
    parser.add_argument("--seed", type=int, help="run this one seed only")
    parser.add_argument("--trace", action="store_true", help="print the whole trace")
    parser.add_argument("--tooth", action="append", default=[], choices=[t.value for t in Tooth],
                        help="plant this bug (repeatable)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    if args.seed is not None:
        outcome = simulate(args.seed, teeth=frozenset(Tooth(t) for t in args.tooth))
        lines = outcome.trace if args.trace else outcome.trace[-TRACE_TAIL:]
        print("\n".join(lines))
        print(f"seed {args.seed}: {'ok' if outcome.ok else 'FAILED'} (trace {outcome.digest})")
        for violation in outcome.violations:
            print(f"  {violation}")
        return 0 if outcome.ok else 1
    if args.soak is not None:
        first = args.first if args.first is not None else soak_start(time.time())
        return soak(args.soak, first, args.jobs, args.tooth)
    start = args.first or 0
    seeds = range(start, start + args.seeds)
    jobs = [(seed, tuple(args.tooth)) for seed in seeds]
    failed = 0
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for seed, violations, tail, _digest in pool.map(_one, jobs, chunksize=4):
            if not violations:
                continue
            failed += 1
            _report(seed, violations, tail, args.tooth)
    print(f"{len(jobs) - failed}/{len(jobs)} seeds passed (seeds {seeds.start}..{seeds.stop - 1})")
    return 1 if failed else 0


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":  # set iteration order must not vary by process
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "sim", *sys.argv[1:]])  # noqa: S606
    sys.exit(main())
