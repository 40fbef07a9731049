"""``python -m sim``: run seeds of the deterministic simulation (docs/simulation.md).

    python -m sim --seeds 500            # seeds 0..499 on every core; exit 1 if any fails
    python -m sim --seed 1234 --trace    # replay one seed and print its whole trace
    python -m sim --seed 7 --tooth no-if-match   # a planted bug: this seed must fail

A failing seed prints its violations, the end of its trace (the interleaving that broke the
invariant) and a one-line replay command. String hashing is pinned (PYTHONHASHSEED=0: the
process re-executes itself if it is not), so a seed replays byte for byte in any process.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=200, help="how many seeds (default 200)")
    parser.add_argument("--first", type=int, default=0, help="the first seed (default 0)")
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
    seeds = range(args.first, args.first + args.seeds)
    jobs = [(seed, tuple(args.tooth)) for seed in seeds]
    failed = 0
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for seed, violations, tail, _digest in pool.map(_one, jobs, chunksize=4):
            if not violations:
                continue
            failed += 1
            print(f"\nseed {seed} FAILED:")
            print("\n".join(f"  {line}" for line in tail))
            for violation in violations:
                print(f"  ! {violation}")
            print(f"  replay: {replay_command(seed, args.tooth)}")
    print(f"{len(jobs) - failed}/{len(jobs)} seeds passed (seeds {seeds.start}..{seeds.stop - 1})")
    return 1 if failed else 0


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":  # set iteration order must not vary by process
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "sim", *sys.argv[1:]])  # noqa: S606
    sys.exit(main())
