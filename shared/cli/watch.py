"""``dagq watch ID``: follow a workflow live until it ends.

On a terminal, a rich live view: a progress bar per task state, per-queue counts, completions per
second, elapsed time and an ETA. Elsewhere (CI logs, pipes), one plain line per change. The exit
code reports how the workflow ended (see ``shared.cli.exitcodes``).
"""

from __future__ import annotations

import argparse

from shared.cli.connect import api_options, open_client, report_errors


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "watch",
        parents=[api_options()],
        help="follow a workflow live until it ends",
        description=(
            "Show a workflow live until it completes, fails or is cancelled: a bar per task"
            " state, per-queue counts, completions/s, elapsed time and ETA (plain lines when not"
            " on a terminal). Exit code: 0 completed, 1 failed, 5 cancelled, 6 --timeout,"
            " 130 Ctrl-C (the workflow keeps running)."
        ),
    )
    parser.add_argument("id", help="workflow id")
    add_follow_options(parser)
    parser.add_argument("--json", action="store_true", help="print the final state as JSON")
    parser.set_defaults(handler=run)


def add_follow_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--interval", type=float, default=1.0, metavar="S", help="poll every S seconds (default 1)"
    )
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="give up after S seconds (exit 6)"
    )


@report_errors
def run(args: argparse.Namespace) -> int:
    from shared.cli.follow import follow_to_end
    from shared.cli.terminal import SafeConsole as Console

    console = Console(stderr=args.json)
    with open_client(args) as client:
        return follow_to_end(client, args.id, args, console=console)
