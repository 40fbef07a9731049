"""A task's logs and attempts: ``logs ID TASK [-f] [--attempt N]``, ``attempts ID TASK``.

Every attempt keeps its own log, readable after retries and reruns; a running attempt's log is
read as it grows (the worker appends to it every few seconds).
"""

from __future__ import annotations

import argparse
import sys

from shared.cli.connect import api_options, open_client, report_errors
from shared.cli.terminal import TerminalFilter, is_terminal


def _attempt_number(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected an attempt number (1, 2, ...), got {text!r}")
    return int(text)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    api = api_options()

    logs = commands.add_parser(
        "logs",
        parents=[api],
        help="print a task's log (stdout and stderr; -f follows a running attempt)",
        description="Print the combined stdout and stderr of a task's attempt: by default the "
        "latest attempt that has a log, as far as it got (a running attempt's log grows every "
        "few seconds). Exit 3 if the workflow, task or attempt does not exist or has no log "
        "(the message says why: never ran, upstream failed...). On a terminal, control "
        "characters the task printed are shown as text (\\x1b...), except newline, tab and "
        "colours (SGR), so a log cannot set the clipboard, the title or clear the screen; a "
        "carriage return starts a new line. Into a pipe or a file, and with --raw, the bytes are "
        "written as they are.",
    )
    logs.add_argument("id", help="workflow id")
    logs.add_argument("task", help="task name (as in `dagq status ID`)")
    logs.add_argument(
        "-f", "--follow", action="store_true", help="keep printing until the attempt ends"
    )
    logs.add_argument(
        "--attempt", type=_attempt_number, metavar="N",
        help="this attempt's log (see `dagq attempts ID TASK`)",
    )  # fmt: skip
    logs.add_argument(
        "--json", action="store_true", help='print {"id", "task", "attempt", "log", "growing"}'
    )
    logs.add_argument(
        "--raw", action="store_true",
        help="write the log's bytes as they are, also on a terminal (escape sequences included)",
    )  # fmt: skip
    logs.set_defaults(handler=run_logs)

    attempts = commands.add_parser(
        "attempts",
        parents=[api],
        help="list every attempt of a task (after retries and reruns)",
        description="List a task's attempts, oldest first: state, worker, times, exit code and "
        "error of each (* marks the current one). Read one's log with "
        "`dagq logs ID TASK --attempt N`.",
    )
    attempts.add_argument("id", help="workflow id")
    attempts.add_argument("task", help="task name")
    attempts.add_argument("--json", action="store_true", help="print the API's JSON")
    attempts.set_defaults(handler=run_attempts)


@report_errors
def run_logs(args: argparse.Namespace) -> int:
    from shared.cli import render

    with open_client(args) as client:
        pieces = client.log_pieces(args.id, args.task, attempt=args.attempt, follow=args.follow)
        if args.json:
            got = list(pieces)
            text = b"".join(p.data for p in got).decode("utf-8", errors="replace")
            if not got:  # an empty log: ask once more for its attempt and state
                got = [client.log_piece(args.id, args.task, attempt=args.attempt)]
            last = got[-1]
            body = {"id": args.id, "task": args.task, "attempt": last.attempt, "log": text}
            print(render.dumps({**body, "growing": last.growing and not args.follow}))
            return 0
        out = sys.stdout.buffer
        shown = None if args.raw or not is_terminal(sys.stdout) else TerminalFilter()
        ended = b"\n"
        for piece in pieces:
            data = piece.data if shown is None else shown.feed(piece.data)
            out.write(data)
            out.flush()
            ended = data[-1:] or ended
        if shown is not None:
            rest = shown.flush()
            out.write(rest)
            ended = rest[-1:] or ended
        if ended != b"\n":
            out.write(b"\n")
        out.flush()
    return 0


@report_errors
def run_attempts(args: argparse.Namespace) -> int:
    from shared.cli import render
    from shared.cli.live_render import attempts_table
    from shared.cli.terminal import SafeConsole as Console

    with open_client(args) as client:
        listing = client.attempts(args.id, args.task)
    if args.json:
        print(render.dumps(listing.model_dump(mode="json")))
        return 0
    Console().print(attempts_table(listing))
    return 0
