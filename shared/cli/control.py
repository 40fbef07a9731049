"""The commands that change a workflow: ``cancel ID`` and ``retry ID`` (rerun from failure)."""

from __future__ import annotations

import argparse
import time

from shared.cli.connect import api_options, open_client, report_errors
from shared.cli.watch import add_follow_options


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    api = api_options()

    cancel = commands.add_parser(
        "cancel",
        parents=[api],
        help="cancel a workflow (running tasks are stopped)",
        description=(
            "Cancel a workflow: nothing new is dispatched and running tasks get SIGTERM, then"
            " SIGKILL. Idempotent; cancelling a finished workflow changes nothing (exit 0)."
        ),
    )
    cancel.add_argument("id", help="workflow id")
    cancel.add_argument("--reason", help="why (kept with the workflow)")
    cancel.add_argument("--wait", action="store_true", help="follow until it has stopped")
    add_follow_options(cancel)
    cancel.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    cancel.set_defaults(handler=run_cancel)

    retry = commands.add_parser(
        "retry",
        parents=[api],
        help="rerun a failed or cancelled workflow from its failures",
        description=(
            "Rerun a failed or cancelled workflow from where it failed: failed, upstream_failed"
            " and cancelled tasks run again (with new attempt numbers); completed tasks keep"
            " their outputs. Refused (exit 4) while the workflow runs or once it completed."
        ),
    )
    retry.add_argument("id", help="workflow id")
    retry.add_argument("--wait", action="store_true", help="follow the rerun until it ends")
    add_follow_options(retry)
    retry.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    retry.set_defaults(handler=run_retry)


@report_errors
def run_cancel(args: argparse.Namespace) -> int:
    from shared.cli import render
    from shared.cli.follow import follow_to_end
    from shared.cli.terminal import SafeConsole as Console

    with open_client(args) as client:
        accepted = client.cancel(args.id, reason=args.reason)
        if args.json and not args.wait:
            print(render.dumps(accepted.model_dump(mode="json")))
            return 0
        console = Console(stderr=args.json)
        if accepted.cancel_requested is False:
            console.print(
                f"workflow {args.id} already finished ({accepted.status}): nothing to cancel",
                highlight=False,
            )
        else:
            console.print(f"cancel requested for {args.id} (was {accepted.status})")
        if not args.wait:
            return 0
        return follow_to_end(client, args.id, args, console=console, pace=False)


@report_errors
def run_retry(args: argparse.Namespace) -> int:
    from shared.cli import render
    from shared.cli.follow import follow_to_end
    from shared.cli.terminal import SafeConsole as Console

    with open_client(args) as client:
        since = time.time()
        accepted = client.retry(args.id)
        if args.json and not args.wait:
            print(render.dumps(accepted.model_dump(mode="json")))
            return 0
        console = Console(stderr=args.json)
        run = accepted.run or 1
        console.print(f"rerun requested for {args.id}: run {run} (was {accepted.status})")
        if not args.wait:
            return 0
        return follow_to_end(client, args.id, args, console=console, min_run=run, since=since)
