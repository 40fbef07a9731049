"""The operations commands: ``workers``, ``doctor [ID]``, ``purge``.

Each takes ``--json`` for scripts (the API's own shape, docs/api.md); the work is done by the API,
so these need only its URL and key.
"""

from __future__ import annotations

import argparse

from shared.cli.connect import api_options, open_client, report_errors


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    api = api_options()

    workers = commands.add_parser(
        "workers",
        parents=[api],
        help="list worker agents: queues, busy slots, current tasks, alive or lost",
        description="List the worker agents of the deployment from the worker registry: the"
        " queues each polls, busy/total slots, the attempts it runs, when it was last seen and"
        " whether it is alive or lost (not seen for lost_after_s, a few heartbeat intervals)."
        " Lost workers are forgotten after DAGQ_WORKER_FORGET_AFTER_S (a week).",
    )
    workers.add_argument(
        "--json", action="store_true", help='print {"workers": [...], "lost_after_s": N}'
    )
    workers.set_defaults(handler=run_workers)


@report_errors
def run_workers(args: argparse.Namespace) -> int:
    import time

    from rich.console import Console

    from shared.cli import ops_render, render

    with open_client(args) as client:
        view = client.workers()
    if args.json:
        print(render.dumps(view.model_dump(mode="json")))
        return 0
    console = Console()
    if not view.workers:
        console.print("no workers registered: start one with `dagq-worker QUEUE` (docs/worker.md)")
        return 0
    console.print(ops_render.workers_table(view, time.time()))
    return 0
