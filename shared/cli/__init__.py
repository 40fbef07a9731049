"""The ``dagq`` command: a thin argparse front end with one module per group of subcommands.

Each module listed in ``COMMAND_MODULES`` has a ``register(commands)`` function that adds its
subparsers to ``commands`` and gives each one ``set_defaults(handler=fn)``, where
``fn(args) -> int`` returns the exit code. Adding a command = adding its module to the list.
Modules import their heavy dependencies inside handlers, so ``dagq --help`` stays fast.

The face: ``main`` (the ``dagq`` entry point), ``build_parser``, ``COMMAND_MODULES`` and
``ExitCode`` (what each exit status means: scripts rely on it).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from shared.cli.exitcodes import ExitCode

__all__ = ["COMMAND_MODULES", "ExitCode", "build_parser", "main"]

COMMAND_MODULES: tuple[str, ...] = (
    "shared.cli.submit",
    "shared.cli.validate",
    "shared.cli.queries",
    "shared.cli.task_logs",
    "shared.cli.watch",
    "shared.cli.control",
    "shared.cli.schedules",
    "shared.cli.ops",
    "shared.cli.cost",
    "shared.cli.ui",
)
"""Modules that register subcommands, in the order ``dagq --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The ``dagq`` parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="dagq",
        description="dagq: DAG pipelines of shell tasks on Azure Functions and Azure Storage.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dagq`` with ``argv`` (default: the process arguments); return the exit code."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        print("dagq: interrupted", file=sys.stderr)
        return 130
    return code
