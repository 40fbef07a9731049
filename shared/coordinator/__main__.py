"""``python -m shared.coordinator``: the coordinator as a long-lived process.

For local stacks, tests, benchmarks and teams that prefer a coordinator process to the Functions
triggers. Settings come from the environment (``DAGQ_STORAGE``, ``DAGQ_PREFIX``, ``DAGQ_LEASE_S``,
``DAGQ_PASS_BUDGET_S``, ``DAGQ_EVENT_VISIBILITY_S``, ...; see shared/settings.py).

Only one coordinator runs per prefix: a second one exits with status 3 and says who to stop, or
with ``--wait-for-lease`` waits until the lease is free (a hot standby). SIGTERM or SIGINT finishes
the current pass, releases the lease and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from shared.errors import DagqError, LeaseError

EXIT_LEASE_HELD = 3
EXIT_CONFIG = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m shared.coordinator",
        description=(
            "Run the dagq coordinator for one prefix until SIGTERM: drain the event queue, apply "
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
    parser.add_argument("--log-level", default="INFO", help="DEBUG shows idle passes too")
    return parser


async def _main(args: argparse.Namespace) -> int:
    from shared.coordinator.entry import Coordinator
    from shared.coordinator.options import CoordinatorOptions
    from shared.settings import Settings
    from shared.storage.factory import ensure_resources, open_storage

    settings = Settings()
    options = CoordinatorOptions.from_settings(settings)
    if args.budget is not None:
        options = CoordinatorOptions.from_settings(settings, pass_budget_s=args.budget)
    async with open_storage(settings) as storage:
        if args.ensure_resources:
            await ensure_resources(storage)
        coordinator = Coordinator(storage, settings.names, options, hold_lease=not args.once)
        if args.once:
            result = await coordinator.run_sweeps()
            return 0 if result.leader else EXIT_LEASE_HELD
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        logging.getLogger("dagq.coordinator").info(
            "coordinator starting for prefix %s", settings.prefix
        )
        await coordinator.run_forever(
            stop,
            wait_for_lease=args.wait_for_lease,
            sweep_every_s=args.sweep_every,
            idle_max_s=args.poll_max,
        )
        logging.getLogger("dagq.coordinator").info("coordinator stopped; lease released")
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
