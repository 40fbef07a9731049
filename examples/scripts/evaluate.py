"""CPU evaluation (fan-in): compare every training run and pick the best one.

Usage: evaluate.py [--min-accuracy A]
Reads the outputs of all training runs from DAGQ_UPSTREAM and outputs the best run, a ranking,
and ``passed`` (the best accuracy reached ``--min-accuracy``) for the publish task's condition.
"""

from __future__ import annotations

import argparse
import sys

from dagq_task import log, upstream, write_output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--min-accuracy", type=float, default=0.8)
    args = parser.parse_args()

    runs = {
        name: out for name, out in upstream().items() if isinstance(out, dict) and "accuracy" in out
    }
    if not runs:
        sys.exit("no training results in DAGQ_UPSTREAM: this task depends on the train runs")
    ranking = sorted(runs, key=lambda name: (-runs[name]["accuracy"], runs[name]["loss"]))
    for place, name in enumerate(ranking, 1):
        run = runs[name]
        log(f"#{place} {name}: accuracy {run['accuracy']:.3f}, loss {run['loss']:.4f}")
    best = ranking[0]
    passed = runs[best]["accuracy"] >= args.min_accuracy
    log(f"best run {best}; {'passes' if passed else 'misses'} the bar of {args.min_accuracy}")
    write_output(
        {
            "best": best,
            "accuracy": runs[best]["accuracy"],
            "lr": runs[best]["lr"],
            "epochs": runs[best]["epochs"],
            "weights": runs[best]["weights"],
            "ranking": ranking,
            "passed": passed,
            "min_accuracy": args.min_accuracy,
        }
    )


if __name__ == "__main__":
    main()
