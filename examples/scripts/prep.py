"""CPU prep: build a small, seeded, synthetic classification data set and hand it downstream.

Usage: prep.py [--rows N] [--seed S]
The data set (2 features, labels from a noisy linear rule) is this task's output, so every
training run receives the same data through DAGQ_UPSTREAM, on whichever machine it runs.
"""

from __future__ import annotations

import argparse
import random

from dagq_task import log, write_output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=240)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    rng = random.Random(args.seed)  # noqa: S311 (reproducible data, not security)
    rows = []
    for _ in range(args.rows):
        x1, x2 = rng.uniform(-1, 1), rng.uniform(-1, 1)
        label = 1 if 1.5 * x1 - 0.8 * x2 + rng.gauss(0, 0.35) > 0 else 0
        rows.append([round(x1, 4), round(x2, 4), label])
    split = int(len(rows) * 0.75)
    positives = sum(row[2] for row in rows)
    log(f"built {len(rows)} rows ({positives} positive), {split} for training")
    write_output({"seed": args.seed, "train": rows[:split], "test": rows[split:]})


if __name__ == "__main__":
    main()
