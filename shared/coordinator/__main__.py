"""``python -m shared.coordinator``: the coordinator as a long-lived process.

For local stacks, tests, benchmarks and teams that prefer a coordinator process to the Functions
triggers. Settings come from the environment (``DAGQ_STORAGE``, ``DAGQ_PREFIX``, ``DAGQ_LEASE_S``,
``DAGQ_PASS_BUDGET_S``, ``DAGQ_EVENT_VISIBILITY_S``, ...; see shared/settings.py).

A process serves the partitions ``--partitions`` names (default: all of ``DAGQ_PARTITIONS``), one
writer per partition lease (``shared/coordinator/process.py``). When another process holds one
of them, this one exits with status 3 and says who to stop, or with ``--wait-for-lease`` serves the
partitions it can get and stands by for the rest: several processes balance the partitions through
the leases, and a process that dies loses its partitions to the others within a lease period.
SIGTERM or SIGINT finishes the current passes, releases the leases and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from shared.errors import ConfigError, DagqError, LeaseError

EXIT_LEASE_HELD = 3
EXIT_CONFIG = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m shared.coordinator",
        description=(
            "Run the dagq coordinator for one prefix until SIGTERM: drain the event queues of its "
            "partitions, apply "
            "events, dispatch ready tasks, flush state blobs, and run the sweeps periodically. "
            "Storage and prefix come from the environment (DAGQ_STORAGE, DAGQ_PREFIX, ...)."
        ),
        epilog=(
            f"Exit status: 0 after a graceful stop, {EXIT_LEASE_HELD} if another coordinator "
            f"holds the lease (without --wait-for-lease), {EXIT_CONFIG} for bad settings."
        ),
    )
    parser.add_argument(
        "--wait-for-lease",
        action="store_true",
        help="if another coordinator holds the lease, wait for it instead of exiting (standby)",
    )
    parser.add_argument(
        "--sweep-every", type=float, default=5.0, metavar="S",
        help="seconds between sweeps (cancel-poll, activate/ready repair, timeouts, poison)",
    )  # fmt: skip
    parser.add_argument(
        "--poll-max", type=float, default=0.5, metavar="S",
        help="longest pause between receives while the event queue is idle",
    )  # fmt: skip
    parser.add_argument(
        "--budget", type=float, default=None, metavar="S",
        help="seconds one pass drains before it checks sweeps and renews (default: "
        "DAGQ_PASS_BUDGET_S)",
    )  # fmt: skip
    parser.add_argument(
        "--once", action="store_true",
        help="run one pass with sweeps and exit (0 if it ran, 3 if not the leader)",
    )  # fmt: skip
    parser.add_argument(
        "--ensure-resources", action="store_true",
        help="create the containers, index table and event queues first (idempotent)",
    )  # fmt: skip
    parser.add_argument(
        "--partitions", default="all", metavar="LIST",
        help="partitions this process serves, e.g. 0-3,6 (default: all of DAGQ_PARTITIONS); "
        "several processes may serve overlapping lists and balance through the leases",
    )  # fmt: skip
    parser.add_argument("--log-level", default="INFO", help="DEBUG shows idle passes too")
    return parser


async def _main(args: argparse.Namespace) -> int:
    from shared.coordinator.options import CoordinatorOptions
    from shared.coordinator.process import PartitionSet, parse_partitions
    from shared.settings import Settings
    from shared.storage.factory import ensure_resources, open_storage

    settings = Settings()
    try:
        partitions = parse_partitions(args.partitions, settings.partitions)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    options = CoordinatorOptions.from_settings(settings)
    if args.budget is not None:
        options = CoordinatorOptions.from_settings(settings, pass_budget_s=args.budget)
    async with open_storage(settings, "app") as storage:
        if args.ensure_resources:
            await ensure_resources(storage, settings.partitions, settings.names)
        coordinators = PartitionSet(storage, settings.names, options, partitions)
        if args.once:
            results = [await c.run_sweeps() for c in coordinators.coordinators.values()]
            await asyncio.gather(*(c.release_lease() for c in coordinators.coordinators.values()))
            return 0 if all(r.leader for r in results) else EXIT_LEASE_HELD
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        log = logging.getLogger("dagq.coordinator")
        log.info("coordinator starting for prefix %s, partitions %s", settings.prefix,
                 ",".join(map(str, partitions)))  # fmt: skip
        await coordinators.run(
            stop,
            wait_for_lease=args.wait_for_lease,
            sweep_every_s=args.sweep_every,
            idle_max_s=args.poll_max,
        )
        log.info("coordinator stopped; leases released")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        return asyncio.run(_main(args))
    except LeaseError as exc:
        print(f"dagq coordinator: {exc}", file=sys.stderr)
        return EXIT_LEASE_HELD
    except DagqError as exc:
        print(f"dagq coordinator: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except Exception as exc:  # pydantic ValidationError from bad settings, mostly
        if type(exc).__name__ == "ValidationError":
            print(f"dagq coordinator: invalid settings: {exc}", file=sys.stderr)
            return EXIT_CONFIG
        raise


if __name__ == "__main__":
    sys.exit(main())
