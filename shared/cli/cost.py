"""``dagq cost ID`` (one run: GPU-hours, CPU-hours, an estimate, per task) and ``dagq cost
--since 7d --by queue|name`` (a period, grouped). The API computes them (docs/cost.md)."""

from __future__ import annotations

import argparse

from shared.cli.connect import api_options, open_client, report_errors
from shared.durations import parse_duration


def _since(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "cost",
        parents=[api_options()],
        help="what a run (or a period) cost: GPU-hours, CPU-hours, an estimate",
        description="Show what a workflow run cost: GPU-hours, CPU-hours, queue wait, an estimate"
        " from the deployment's price table (DAGQ_PRICES), the storage requests it caused and"
        " what the result cache saved, per task. With --since instead of ID, the workflows"
        " created in that period, grouped --by queue or name.",
        epilog="examples:\n  dagq cost 20261201-101500-ab12cd\n  dagq cost --since 7d --by queue",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("id", nargs="?", help="workflow id")
    parser.add_argument(
        "--since", type=_since, metavar="AGE", help="a period instead: 7d, 24h, 90m, 2w"
    )
    parser.add_argument(
        "--by", choices=("queue", "name"), default="queue", help="group a period (default queue)"
    )
    parser.add_argument("--json", action="store_true", help="print the API's JSON")
    parser.set_defaults(handler=run)


@report_errors
def run(args: argparse.Namespace) -> int:
    from shared.cli import cost_render, render
    from shared.cli.exitcodes import ExitCode
    from shared.cli.terminal import SafeConsole as Console

    if bool(args.id) == (args.since is not None):
        print("dagq cost: give a workflow ID, or --since AGE (not both)")
        return int(ExitCode.USAGE)
    with open_client(args) as client:
        view = (
            client.workflow_cost(args.id)
            if args.id
            else client.cost(since_s=args.since, by=args.by)
        )
    if args.json:
        print(render.dumps(view.model_dump(mode="json")))
        return 0
    Console().print(cost_render.render(view))
    return 0
