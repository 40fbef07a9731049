"""``dagq schedule``: run a workflow on a cron schedule (issue 29).

``dagq schedule create NAME FILE --cron "0 2 * * *" [--timezone Europe/Berlin] [--param k=v ...]
[--notify URL ...] [--concurrency allow|forbid|replace] [--catch-up N]``, and ``schedule list``,
``show NAME``, ``pause NAME``, ``resume NAME``, ``delete NAME``. The API checks everything (a bad
cron, an unknown time zone, a bad name, a definition that does not compile: exit 2 with its
message); the app's sweep starts each slot's run as ``{NAME}-{UTC slot}``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from shared.cli.connect import api_options, open_client, report_errors

if TYPE_CHECKING:
    from shared.views import ScheduleView

CONCURRENCY = ("allow", "forbid", "replace")


def parse_param(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` -> the pair (the value may hold '=' and be empty)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    api = api_options()
    schedule = commands.add_parser(
        "schedule",
        help="run a workflow on a cron schedule: create, list, show, pause, resume, delete",
        description="Schedules run a workflow definition at every slot of a cron expression,"
        " started by the app's sweep (no other scheduler needed). Each run's workflow id is"
        " NAME-{UTC slot time} (nightly-20261205T010000Z), so a slot never starts twice.",
    )
    verbs = schedule.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = verbs.add_parser(
        "create",
        parents=[api],
        help="create a schedule of FILE",
        description="Create a schedule: run FILE (YAML or JSON) at every slot of --cron in"
        " --timezone. The definition is checked now, with the --param values and --notify"
        " webhooks each run gets. Creating the same schedule again changes nothing; another"
        " schedule of the same NAME is refused (delete it first). Exit 2 for a bad cron,"
        " time zone, name or definition.",
    )
    create.add_argument("name", metavar="NAME", help="the schedule's name (starts its run ids)")
    create.add_argument("file", metavar="FILE", type=Path, help="the workflow definition")
    create.add_argument(
        "--cron",
        required=True,
        metavar="EXPR",
        help="five fields: minute hour day-of-month month day-of-week ('0 2 * * *': 02:00 daily)",
    )
    create.add_argument(
        "--timezone", default="UTC", metavar="TZ", help="IANA time zone of --cron (default UTC)"
    )
    create.add_argument(
        "--param",
        type=parse_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter value of every run (repeatable)",
    )
    create.add_argument(
        "--notify", action="append", default=[], metavar="URL", help="a webhook of every run"
    )
    create.add_argument(
        "--concurrency",
        choices=CONCURRENCY,
        default="allow",
        help="while the previous run is active: start anyway (allow, default), skip the slot"
        " (forbid), or cancel that run (replace)",
    )
    create.add_argument(
        "--catch-up",
        type=int,
        default=1,
        metavar="N",
        help="after downtime, start at most the N latest missed slots (default 1: the latest)",
    )
    create.add_argument("--json", action="store_true", help="print the API's JSON")
    create.set_defaults(handler=run_create)

    listing = verbs.add_parser("list", parents=[api], help="list schedules")
    listing.add_argument("--json", action="store_true", help="print the API's JSON")
    listing.set_defaults(handler=run_list)
    for verb, what, handler in (
        ("show", "a schedule with its next slots and latest runs", run_show),
        ("pause", "pause a schedule: no slot starts until it is resumed", run_pause),
        ("resume", "resume a schedule (the paused slots are not caught up)", run_resume),
        ("delete", "delete a schedule (its runs stay)", run_delete),
    ):
        sub = verbs.add_parser(
            verb, parents=[api], help=what, description=what[0].upper() + what[1:] + "."
        )
        sub.add_argument("name", metavar="NAME")
        sub.add_argument("--json", action="store_true", help="print the API's JSON")
        sub.set_defaults(handler=handler)


def _print_view(args: argparse.Namespace, view: ScheduleView) -> int:
    from shared.cli import render

    if args.json:
        print(render.dumps(view.model_dump(mode="json")))
    else:
        print(schedule_text(view))
    return 0


@report_errors
def run_create(args: argparse.Namespace) -> int:
    if not 1 <= args.catch_up <= 100:
        print("dagq schedule create: --catch-up takes 1 to 100", file=sys.stderr)
        return 2
    with open_client(args) as client:
        view = client.create_schedule(
            args.name, args.file, cron=args.cron, timezone=args.timezone,
            params=dict(args.param), notify=args.notify, concurrency=args.concurrency,
            catch_up=args.catch_up,
        )  # fmt: skip
    return _print_view(args, view)


@report_errors
def run_list(args: argparse.Namespace) -> int:
    from shared.cli import render

    with open_client(args) as client:
        found = client.schedules()
    if args.json:
        print(render.dumps(found.model_dump(mode="json")))
        return 0
    if not found.schedules:
        print('no schedules: create one with dagq schedule create NAME FILE --cron "0 2 * * *"')
        return 0
    print(list_text(found.schedules))
    return 0


@report_errors
def run_show(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        return _print_view(args, client.schedule(args.name))


@report_errors
def run_pause(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        return _print_view(args, client.pause_schedule(args.name))


@report_errors
def run_resume(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        return _print_view(args, client.resume_schedule(args.name))


@report_errors
def run_delete(args: argparse.Namespace) -> int:
    from shared.cli import render

    with open_client(args) as client:
        result = client.delete_schedule(args.name)
    if args.json:
        print(render.dumps(result.model_dump(mode="json")))
    elif result.deleted:
        print(f"deleted schedule {args.name} (its runs stay)")
    else:
        print(f"there was no schedule {args.name}")
    return 0


# -- text ------------------------------------------------------------------------------------


def _when(view: ScheduleView) -> str:
    from shared.cli.style import timestamp

    if view.paused:
        return "paused"
    return timestamp(view.next_runs[0]) + " UTC" if view.next_runs else "-"


def list_text(views: list[ScheduleView]) -> str:
    """The table of ``dagq schedule list``: one line per schedule."""
    from shared.cli.terminal import neutralise

    rows = [("NAME", "CRON", "TIMEZONE", "NEXT RUN", "LAST RUN", "STATUS")]
    for view in views:
        last = view.runs[0] if view.runs else None
        rows.append((
            view.name, view.cron, view.timezone, _when(view),
            last.id if last else "-", str(last.status or "purged") if last else "-",
        ))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]  # fmt: skip
    return neutralise("\n".join(lines))


def schedule_text(view: ScheduleView) -> str:
    """``dagq schedule show``: the schedule, its next slots and latest runs."""
    from shared.cli.style import timestamp
    from shared.cli.terminal import neutralise

    lines = [
        f"schedule {view.name}" + (" (paused)" if view.paused else ""),
        f"  cron:        {view.cron}  ({view.timezone})",
        f"  concurrency: {view.concurrency}   catch-up: {view.catch_up}",
    ]
    if view.params:
        lines.append("  params:      " + " ".join(f"{k}={v}" for k, v in view.params.items()))
    if view.notify:
        lines.append("  notify:      " + " ".join(view.notify))
    upcoming = ", ".join(timestamp(t) for t in view.next_runs) or "-"
    lines.append(f"  next runs:   {upcoming} (UTC)" if view.next_runs else "  next runs:   -")
    if view.note:
        lines.append(f"  note:        {view.note}")
    lines.append("  runs:" if view.runs else "  runs:        none yet")
    for run in view.runs:
        lines.append(f"    {run.id}  {run.status or 'purged'}")
    return neutralise("\n".join(lines))
