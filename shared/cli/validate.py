"""``dagq validate FILE...``: check workflow definitions locally, without an API.

Exit 0 when every file is valid (one summary line each on stdout); exit 2 when any is not (every
problem of every invalid file on stderr, as ``file:location: message``). When the configured
deployment answers, a queue none of its workers ever polled is a warning on stderr (a typo like
``gpus``); without one, nothing is said of queues.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from shared.cli.connect import api_options
from shared.cli.params import add_param_option

if TYPE_CHECKING:
    from shared.definition.workflow import CompiledWorkflow

OK = 0
INVALID = 2
STDIN = "-"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``validate`` subcommand."""
    parser = commands.add_parser(
        "validate",
        help="check workflow definitions (YAML or JSON) without submitting them",
        description=(
            "Check workflow definitions: syntax, keys and types, names, dependencies, cycles,"
            " foreach expansion, conditions and limits. Prints one line per valid file; exits 2"
            " with every problem when any file is invalid. Warns (stderr, exit 0) of a queue no"
            " worker of the configured deployment ever polled, when that deployment answers."
        ),
        epilog="examples:\n  dagq validate pipeline.yaml\n  dagq validate examples/*.yaml\n"
        "  generate-flow | dagq validate -",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[api_options()],
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="definition files (.yaml, .yml, .json), or -"
    )
    add_param_option(parser)  # (without it, required parameters may go without a value)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Validate each file; print a summary or its problems; return 0 or 2."""
    from shared.cli.params import parse_params
    from shared.definition.compiler import compile_text
    from shared.errors import DagqError, DefinitionError

    try:
        params = parse_params(args.params)
    except DagqError as exc:
        print(f"dagq: {exc}", file=sys.stderr)
        return INVALID
    code = OK
    queues: set[str] = set()
    for file in args.files:
        label = "<stdin>" if file == STDIN else file
        try:
            data = sys.stdin.buffer.read() if file == STDIN else Path(file).read_bytes()
        except OSError as exc:
            print(f"{label}: cannot read: {exc.strerror or exc}", file=sys.stderr)
            code = INVALID
            continue
        try:
            wf = compile_text(
                data,
                source=label,
                fmt=_format_of(file),
                params=params,
                require_params=params is not None,
            )
        except DefinitionError as exc:
            for issue in exc.issues:
                print(f"{label}:{issue.location}: {issue.message}", file=sys.stderr)
            code = INVALID
            continue
        print(f"{label}: ok — {summary(wf)}")
        queues.update(wf.queues)
    if queues:
        _warn_never_served(args, queues)
    return code


def _warn_never_served(args: argparse.Namespace, queues: set[str]) -> None:
    """The advisory look at the deployment's worker registry (quick: 5 s at most; silent when
    no deployment answers or the configuration is unusable)."""
    from shared.cli.unserved import warn_never_served
    from shared.client import Client
    from shared.errors import DagqError

    try:
        with Client(args.api_url, args.api_key, config_path=args.config, timeout_s=5.0) as client:
            warn_never_served(client, queues, lambda text: print(text, file=sys.stderr))
    except DagqError:
        return


def summary(wf: CompiledWorkflow) -> str:
    """``12 tasks (1 root, 1 sink), queues: cpu, gpu``."""
    n, roots, sinks = len(wf.tasks), len(wf.roots), len(wf.sinks)
    params = f", params: {', '.join(wf.params)}" if wf.params else ""
    return (
        f"{n} task{'s' if n != 1 else ''} ({roots} root{'s' if roots != 1 else ''},"
        f" {sinks} sink{'s' if sinks != 1 else ''}), queues: {', '.join(wf.queues)}{params}"
    )


def _format_of(file: str) -> Literal["yaml", "json"] | None:
    suffix = Path(file).suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    return None
