"""The operations commands: ``workers``, ``doctor [ID]``, ``purge``.

Each takes ``--json`` for scripts (the API's own shape, docs/api.md); the work is done by the API,
so these need only its URL and key.
"""

from __future__ import annotations

import argparse
import sys

from shared.cli.connect import api_options, open_client, report_errors
from shared.durations import parse_duration, spell_duration
from shared.states import WorkflowStatus

_PURGEABLE = tuple(status.value for status in WorkflowStatus if status.is_terminal)


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``3600s``, ``2w`` (or plain seconds) -> seconds."""
    try:
        return parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an age such as 30d, 12h, 90m or 3600s, got {text!r}"
        ) from None


def parse_statuses(text: str) -> list[str]:
    """``completed,failed`` -> the list, each a status a purge may take."""
    statuses = [part.strip().lower() for part in text.split(",") if part.strip()]
    bad = [s for s in statuses if s not in _PURGEABLE]
    if bad or not statuses:
        raise argparse.ArgumentTypeError(
            f"purge takes finished workflows only: use one or more of {', '.join(_PURGEABLE)}"
        )
    return statuses


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
    workers.add_argument(
        "--utilization",
        action="store_true",
        help="per queue: busy slot-seconds / alive slot-seconds of the workers polling it, since"
        " each started (the registry's window)",
    )
    workers.set_defaults(handler=run_workers)

    doctor = commands.add_parser(
        "doctor",
        parents=[api],
        help="check the deployment (and one workflow): what is wrong and how to fix it",
        description="Check the deployment, and with ID one workflow, and print each finding with"
        " its fix: tasks queued on a queue no live worker polls, queued tasks whose message is"
        " missing from their queue (lost dispatches), events waiting while no coordinator holds"
        " the lease, overdue sweeps, workflows stuck pending, poison messages, recent dead"
        " letters (with their reasons), workers with skewed clocks, queues no worker ever polled,"
        " lost workers. The API computes the checks. Exit 0 when healthy, 1 with findings"
        " (errors or warnings), 3 if ID does not exist.",
    )
    doctor.add_argument("id", nargs="?", help="also check this workflow")
    doctor.add_argument("--json", action="store_true", help="print the API's JSON report")
    doctor.set_defaults(handler=run_doctor)

    purge = commands.add_parser(
        "purge",
        parents=[api],
        help="delete finished workflows for good (definition, state, index row, outputs, logs)",
        description="Delete finished workflows for good: their definition and state blobs, index"
        " row, outputs, logs and claims. Either name them (dagq purge ID...), or give"
        " --older-than to purge every workflow that finished longer ago (optionally only those in"
        " --status). Running workflows are never purged (cancel them first). Idempotent and safe"
        " to interrupt: a purge cut short is finished by the next one. Exit 3 if a named workflow"
        " does not exist, 4 if one is still running.",
    )
    purge.add_argument("ids", nargs="*", metavar="ID", help="workflows to purge")
    purge.add_argument(
        "--older-than",
        type=parse_age,
        metavar="AGE",
        help="purge workflows that finished more than AGE ago: 30d, 12h, 90m, 3600s, 2w",
    )
    purge.add_argument(
        "--status",
        type=parse_statuses,
        metavar="S[,S]",
        help="with --older-than: only these statuses (completed, failed, cancelled; default all)",
    )
    purge.add_argument(
        "--dry-run", action="store_true", help="with --older-than: list what would be purged"
    )
    purge.add_argument("--json", action="store_true", help="print the API's JSON")
    purge.set_defaults(handler=run_purge)


@report_errors
def run_workers(args: argparse.Namespace) -> int:
    import time

    from shared.cli import ops_render, render
    from shared.cli.terminal import SafeConsole as Console

    with open_client(args) as client:
        view = client.workers()
    if args.json:
        print(render.dumps(view.model_dump(mode="json")))
        return 0
    console = Console()
    if not view.workers:
        console.print("no workers registered: start one with `dagq-worker QUEUE` (docs/worker.md)")
        return 0
    if args.utilization:
        from shared.cli.utilization import utilization_table

        console.print(utilization_table(view))
        return 0
    console.print(ops_render.workers_table(view, time.time()))
    if view.pool_window_s:  # an older app reports no machines
        console.print(ops_render.pool_text(view), soft_wrap=True)
    return 0


@report_errors
def run_doctor(args: argparse.Namespace) -> int:
    from shared.cli import ops_render, render
    from shared.cli.terminal import SafeConsole as Console

    with open_client(args) as client:
        report = client.doctor(args.id)
        url = client.base_url
    if args.json:
        print(render.dumps(report.model_dump(mode="json")))
    else:
        Console(highlight=False, soft_wrap=True).print(ops_render.doctor_text(report, url))
    return 0 if report.healthy else 1


@report_errors
def run_purge(args: argparse.Namespace) -> int:
    import sys

    if not args.ids and args.older_than is None:
        what = "--dry-run needs" if args.dry_run else "give workflow ids, or"
        print(f"dagq purge: {what} --older-than AGE (e.g. --older-than 30d)", file=sys.stderr)
        return 2
    if args.ids and args.older_than is not None:
        print("dagq purge: give workflow ids, or --older-than AGE (not both)", file=sys.stderr)
        return 2
    if args.ids and (args.status or args.dry_run):
        print("dagq purge: --status and --dry-run go with --older-than", file=sys.stderr)
        return 2
    if args.ids:
        return _purge_ids(args)
    return _purge_older(args)


def _purge_ids(args: argparse.Namespace) -> int:
    import sys

    from shared.cli import render
    from shared.cli.exitcodes import ExitCode
    from shared.cli.terminal import for_stderr
    from shared.client import ApiError

    code = ExitCode.OK
    done = []
    with open_client(args) as client:
        for workflow_id in args.ids:
            try:
                view = client.delete(workflow_id)
            except ApiError as exc:
                print(for_stderr(f"dagq: {workflow_id}: {exc.describe()}"), file=sys.stderr)
                failed = ExitCode.NOT_FOUND if exc.is_not_found else ExitCode.API_ERROR
                code = code or failed
                continue
            done.append(view)
            if not args.json:
                print(f"purged {view.id} ({view.status}, {view.blobs_deleted} output blobs)")
    if args.json:
        print(render.dumps([view.model_dump(mode="json") for view in done]))
    return code


def _purge_older(args: argparse.Namespace) -> int:
    from shared.cli import render

    items, resumed, problems = [], [], []
    with open_client(args) as client:
        for report in client.iter_purge(
            args.older_than, statuses=args.status or (), dry_run=args.dry_run
        ):
            items += report.workflows
            resumed += [i for i in report.resumed if i not in resumed]
            problems += [report.cache_problem] if report.cache_problem else []
            if not args.json:
                for item in report.workflows:
                    verb = "would purge" if args.dry_run else "purged"
                    print(f"{verb} {item.id} {item.name} ({item.status})")
    if args.json:
        body = {
            "dry_run": args.dry_run,
            "older_than_s": args.older_than,
            "workflows": [item.model_dump(mode="json") for item in items],
            "resumed": resumed,
            "problems": problems,
        }
        print(render.dumps(body))
        return 0
    for problem in problems:
        print(f"dagq purge: {problem}", file=sys.stderr)
    if resumed:
        verb = "found" if args.dry_run else "finished"
        print(f"{verb} {len(resumed)} interrupted purge(s): {', '.join(resumed)}")
    verb = "would purge" if args.dry_run else "purged"
    age = spell_duration(args.older_than)
    print(f"{verb} {len(items)} workflow(s) finished more than {age} ago")
    return 0
