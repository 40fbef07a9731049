"""Merge every shard's result (fan-in over all expansions of ``process``) and check the total.

Usage: merge_shards.py [--rows N]
Reads the outputs of all its parents (one per shard) from DAGQ_UPSTREAM; fails (exit 1) if the
shards do not cover the rows exactly.
Output: {"shards": count, "rows": N, "sum": total}
"""

from __future__ import annotations

import argparse
import sys

from dagq_task import log, upstream, write_output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()
    results = [value for value in upstream().values() if isinstance(value, dict)]
    rows = sum(int(r.get("rows", 0)) for r in results)
    total = sum(int(r.get("sum", 0)) for r in results)
    expected = sum(i * i for i in range(args.rows))
    log(f"{len(results)} shards, {rows} rows, sum {total} (expected {expected})")
    write_output({"shards": len(results), "rows": rows, "sum": total})
    if rows != args.rows or total != expected:
        sys.exit(1)


if __name__ == "__main__":
    main()
