"""``dagq validate FILE...``: check workflow definitions locally, without an API.

Exit 0 when every file is valid (one summary line each on stdout); exit 2 when any is not (every
problem of every invalid file on stderr, as ``file:location: message``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

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
            " with every problem when any file is invalid."
        ),
        epilog="examples:\n  dagq validate pipeline.yaml\n  dagq validate examples/*.yaml\n"
        "  generate-flow | dagq validate -",
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    return code


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
