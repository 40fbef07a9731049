"""List the shards of a (synthetic) data set: how many there are is only known at run time.

Usage: list_shards.py [--rows N] [--shard-rows K]
Output: {"rows": N, "shards": [{"name": "shard-0", "start": 0, "stop": K}, ...]} — the list a
``foreach_from: inputs.list_shards.shards`` task expands over, one task per shard.
"""

from __future__ import annotations

import argparse

from dagq_task import log, write_output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--shard-rows", type=int, default=150)
    args = parser.parse_args()
    shards = [
        {"name": f"shard-{i}", "start": start, "stop": min(start + args.shard_rows, args.rows)}
        for i, start in enumerate(range(0, args.rows, args.shard_rows))
    ]
    log(f"{args.rows} rows in {len(shards)} shards of up to {args.shard_rows}")
    write_output({"rows": args.rows, "shards": shards})


if __name__ == "__main__":
    main()
