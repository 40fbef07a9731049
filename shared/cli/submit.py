"""``dagq submit FILE|-``: send a workflow definition to the API; optionally follow it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from shared.cli.connect import api_options, open_client, report_errors
from shared.cli.params import add_param_option
from shared.cli.watch import add_follow_options

if TYPE_CHECKING:
    from shared.client import Client


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "submit",
        parents=[api_options()],
        help="submit a workflow (YAML or JSON) and print its id",
        description=(
            "Submit a workflow definition and print its id on stdout. With --wait, follow it\n"
            "to the end; the exit code then says how it ended (0 completed, 1 failed,\n"
            "5 cancelled). An invalid definition exits 2 with every problem listed."
        ),
        epilog="examples:\n  dagq submit examples/pipeline.yaml --wait\n"
        "  ID=$(dagq submit flow.yaml --id nightly-2026-11-29)\n"
        "  dagq submit pipeline.yaml --refresh train    # retrain, reuse the rest\n"
        "  dagq submit examples/nightly.yaml --param checkpoint=ckpt-0042 --param lr=0.01\n"
        "  dagq submit nightly.yaml --notify https://hooks.example.com/dagq\n"
        "  generate-flow | dagq submit -",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help="definition file (.yaml, .yml, .json), or - for stdin")
    parser.add_argument(
        "--id",
        dest="workflow_id",
        metavar="ID",
        help="idempotent submit: the same id and definition return the existing workflow;"
        " a different definition is refused (exit 4)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="run every task: no result is taken from the cache and none is recorded",
    )
    parser.add_argument(
        "--refresh",
        action="append",
        default=[],
        metavar="TASK",
        help="recompute this cached task (a foreach task's name: all of it) and replace its"
        " cache entry; repeat for several",
    )
    add_param_option(parser)
    parser.add_argument(
        "--notify",
        action="append",
        default=[],
        metavar="URL",
        help="POST to this webhook when the run completes, fails or is cancelled (JSON body, see"
        " docs/notifications.md); repeat for several",
    )
    parser.add_argument("--wait", action="store_true", help="follow the workflow until it ends")
    add_follow_options(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON: the submit result, or with --wait the final workflow",
    )
    parser.set_defaults(handler=run)


def _read(file: str) -> tuple[bytes, str | None]:
    from shared.errors import DagqError

    if file == "-":
        return sys.stdin.buffer.read(), None
    path = Path(file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DagqError(f"cannot read {file}: {exc.strerror or exc}") from None
    return data, "json" if path.suffix.lower() == ".json" else None


@report_errors
def run(args: argparse.Namespace) -> int:
    from shared.cli import render
    from shared.cli.exitcodes import ExitCode
    from shared.cli.follow import follow_to_end
    from shared.cli.params import parse_params
    from shared.cli.terminal import SafeConsole as Console
    from shared.errors import DagqError

    params = parse_params(args.params)
    data, fmt = _read(args.file)
    if not data.strip():
        raise DagqError(f"{args.file}: the definition is empty")
    err = Console(stderr=True)
    with open_client(args) as client:
        submitted = client.submit(
            data,
            workflow_id=args.workflow_id,
            fmt="json" if fmt == "json" else None,
            no_cache=args.no_cache,
            refresh=args.refresh,
            params=params,
            notify=args.notify,
        )
        _warn_never_served(client, submitted.id)
        if not submitted.created:
            err.print(
                f"workflow {submitted.id} already exists with this definition (idempotent"
                " submit): nothing new was created",
                highlight=False,
            )
        if not args.wait:
            if args.json:
                print(render.dumps(submitted.model_dump(mode="json")))
            else:
                print(submitted.id)
            return 0
        if not args.json:
            print(submitted.id, flush=True)
        console = err if args.json else Console()
        try:
            return follow_to_end(client, submitted.id, args, console=console)
        except KeyboardInterrupt:
            err.print(
                f"stopped following {submitted.id}; it keeps running. Follow it again with"
                f" `dagq watch {submitted.id}`, stop it with `dagq cancel {submitted.id}`.",
                highlight=False,
            )
            return ExitCode.INTERRUPTED


def _warn_never_served(client: Client, workflow_id: str) -> None:
    """Warn (stderr) of the workflow's queues no worker of this deployment ever polled."""
    from shared.cli.unserved import warn_never_served
    from shared.errors import DagqError

    try:
        queues = {task.queue for task in client.graph(workflow_id).tasks}
    except DagqError:
        return  # advisory
    warn_never_served(client, queues, lambda text: print(text, file=sys.stderr))
