"""Process one shard: sum the squares of the row numbers in [start, stop).

Usage: process_shard.py --start A --stop B
The shard also arrives as environment variables (DAGQ_VAR_item_name, DAGQ_VAR_item_start, ...):
the name is read from there, the safe way to use a value inside a string.
Output: {"shard": name, "rows": B - A, "sum": ...}
"""

from __future__ import annotations

import argparse
import os

from dagq_task import log, write_output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--start", type=int, required=True)
    parser.add_argument("--stop", type=int, required=True)
    args = parser.parse_args()
    # dagq names it after the item's key, lower case as written: DAGQ_VAR_item_name.
    name = os.environ.get("DAGQ_VAR_item_name", f"rows {args.start}-{args.stop}")  # noqa: SIM112
    total = sum(i * i for i in range(args.start, args.stop))
    log(f"{name}: {args.stop - args.start} rows, sum of squares {total}")
    write_output({"shard": name, "rows": args.stop - args.start, "sum": total})


if __name__ == "__main__":
    main()
