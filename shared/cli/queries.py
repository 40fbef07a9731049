"""The read commands: ``list``, ``status ID``, ``outputs ID [TASK]``, ``health`` (a task's logs
and attempts: ``shared.cli.task_logs``).

Each takes ``--json`` for scripts; the JSON is the API's own shape (docs/api.md).
"""

from __future__ import annotations

import argparse
from typing import Any

from shared.cli.connect import api_options, open_client, report_errors
from shared.states import WorkflowStatus


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


_STATUSES = tuple(status.value for status in WorkflowStatus)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    api = api_options()

    listing = commands.add_parser(
        "list",
        parents=[api],
        help="list workflows, newest first",
        description="List workflows, newest first (from the index: it may lag a moment).",
    )
    listing.add_argument("--status", choices=_STATUSES, help="only workflows in this status")
    listing.add_argument("--name", metavar="PREFIX", help="only workflows whose name starts so")
    listing.add_argument(
        "--limit", type=_positive, default=20, metavar="N", help="page size (default 20)"
    )
    listing.add_argument("--next", metavar="TOKEN", help="continue a previous listing")
    listing.add_argument("--all", action="store_true", help="follow pages to the end")
    listing.add_argument("--json", action="store_true", help='print {"items": [...], "next": ...}')
    listing.set_defaults(handler=run_list)

    status = commands.add_parser(
        "status",
        parents=[api],
        help="show a workflow: status, counts per state, task table",
        description="Show a workflow's status, its task counts per state and a task table.",
    )
    status.add_argument("id", help="workflow id")
    status.add_argument("--all", action="store_true", help="list every task (default: 50)")
    status.add_argument("--json", action="store_true", help="print the API's JSON")
    status.set_defaults(handler=run_status)

    outputs = commands.add_parser(
        "outputs",
        parents=[api],
        help="print task outputs (JSON)",
        description="Print the JSON outputs of a workflow's completed tasks, as"
        " {task: output}, or the output of one TASK. Exit 3 if TASK has no output.",
    )
    outputs.add_argument("id", help="workflow id")
    outputs.add_argument("task", nargs="?", help="only this task's output")
    outputs.add_argument("--json", action="store_true", help="compact JSON on one line")
    outputs.set_defaults(handler=run_outputs)

    health = commands.add_parser(
        "health",
        parents=[api],
        help="check the API: storage, coordinator lease, event queue depths",
        description="Ask the API whether it reaches its storage, whether a coordinator holds the"
        " lease, and how deep the event and poison queues are (each partition's, when the"
        " deployment has more than one). Exit 0 when healthy, 4 when not.",
    )
    health.add_argument("--json", action="store_true", help="print the API's JSON")
    health.set_defaults(handler=run_health)


@report_errors
def run_list(args: argparse.Namespace) -> int:
    from shared.cli import render
    from shared.cli.terminal import SafeConsole as Console

    with open_client(args) as client:
        if args.all:
            items = list(
                client.iter_workflows(status=args.status, name=args.name, page_size=args.limit)
            )
            next_token = None
        else:
            page = client.list(
                status=args.status, name=args.name, limit=args.limit, next_token=args.next
            )
            items, next_token = page.items, page.next
    if args.json:
        body = {"items": [i.model_dump(mode="json") for i in items], "next": next_token}
        print(render.dumps(body))
        return 0
    console = Console()
    if not items:
        console.print("no workflows" + (" match" if args.status or args.name else ""))
    else:
        console.print(render.list_table(items))
    if next_token:
        console.print(f"more: dagq list --next {next_token}", highlight=False, soft_wrap=True)
    return 0


@report_errors
def run_status(args: argparse.Namespace) -> int:
    from shared.cli import render
    from shared.cli.terminal import SafeConsole as Console

    with open_client(args) as client:
        wf = client.get(args.id)
    if args.json:
        print(render.dumps(wf.model_dump(mode="json")))
        return 0
    Console().print(render.status_view(wf, limit=None if args.all else 50))
    return 0


@report_errors
def run_outputs(args: argparse.Namespace) -> int:

    from shared.cli import render

    with open_client(args) as client:
        if args.task:
            value: object = client.output(args.id, args.task)
        else:
            value = client.outputs(args.id)
    if args.json:
        print(render.json_compact(value))
    else:
        print(render.dumps(value))
    return 0


@report_errors
def run_health(args: argparse.Namespace) -> int:
    from shared.cli import render
    from shared.cli.exitcodes import ExitCode

    with open_client(args) as client:
        report = client.health()
        url = client.base_url
    ok = report.get("status") == "ok"
    if args.json:
        print(render.dumps(report))
    else:
        print("\n".join(health_lines(report, url)))
    return ExitCode.OK if ok else ExitCode.API_ERROR


def health_lines(report: dict[str, Any], url: str) -> list[str]:
    """``dagq health``'s text: the top-level (partition 0) lease and queues, then one line per
    partition when the deployment has more than one."""
    coordinator = report.get("coordinator") or {}
    events = report.get("event_queue") or {}
    poison = report.get("poison_queue") or {}
    lines = [f"API {url}: {report.get('status', 'unknown')}"]
    lines.append(f"  storage: {report.get('storage', '?')}")
    if report.get("error"):
        lines.append(f"  error: {report['error']}")
    if coordinator:
        held = coordinator.get("lease_held")
        lines.append(f"  coordinator lease: {'held' if held else 'free'}")
    if events:
        lines.append(f"  event queue {events.get('name')}: {events.get('depth')} messages")
    if poison:
        lines.append(f"  poison queue {poison.get('name')}: {poison.get('depth')} messages")
    partitions = report.get("partitions") or []
    if len(partitions) > 1:
        lines.append(f"  partitions ({len(partitions)}):")
        for part in partitions:
            lease = "held" if part.get("lease_held") else "free"
            ev = part.get("event_queue") or {}
            po = part.get("poison_queue") or {}
            lines.append(
                f"    {part.get('partition')}: lease {lease}, events {ev.get('depth')}"
                f" ({ev.get('name')}), poison {po.get('depth')} ({po.get('name')})"
            )
    return lines
