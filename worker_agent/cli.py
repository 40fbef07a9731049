"""``dagq-worker [QUEUE ...] [options]``: the worker agent's command line.

Every option is also a ``DAGQ_WORKER_*`` environment variable (the command line wins); storage
comes from ``DAGQ_STORAGE`` / ``DAGQ_STORAGE__accountName`` and ``DAGQ_PREFIX`` like the rest of
dagq. The options are generated from ``WorkerSettings`` so ``--help`` and the settings never
disagree.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from shared.errors import DagqError
from shared.settings import Settings
from worker_agent.config import WorkerSettings
from worker_agent.gpu import slot_plan
from worker_agent.telemetry import setup_logging

PROG = "dagq-worker"

_STORAGE_OPTIONS = {
    "storage": (
        "storage_connection_string",
        "Storage connection string (prefer the DAGQ_STORAGE variable: the command line is visible "
        "to other users of the machine).",
    ),
    "account": (
        "storage_account",
        "Storage account name, used with DefaultAzureCredential / managed identity "
        "[env DAGQ_STORAGE__accountName].",
    ),
    "prefix": (
        "prefix",
        "Deployment prefix of every queue, container and table [env DAGQ_PREFIX].",
    ),
}


def _is_bool(annotation: Any) -> bool:
    return annotation is bool


def _metavar(annotation: Any) -> str:
    args = typing.get_args(annotation)
    base = next((a for a in args if a is not type(None)), annotation)
    if typing.get_origin(annotation) in (typing.Literal,):
        return "{" + ",".join(map(str, args)) + "}"
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return _metavar(base)
    name = getattr(base, "__name__", "value")
    return {"str": "TEXT", "float": "NUMBER"}.get(name, name.upper())


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one option per WorkerSettings field."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Pull dagq task queues, run each task's command, heartbeat and report. "
        "Every option can also be set as DAGQ_WORKER_<OPTION> (e.g. DAGQ_WORKER_CONCURRENCY).",
        epilog="Storage: set DAGQ_STORAGE (connection string) or DAGQ_STORAGE__accountName "
        "(managed identity), and DAGQ_PREFIX. See docs/worker.md.",
    )
    parser.add_argument(
        "queue_args",
        nargs="*",
        metavar="QUEUE",
        help="Queues to poll, highest priority first, as named in workflow definitions "
        "[env DAGQ_WORKER_QUEUES].",
    )
    storage = parser.add_argument_group("storage")
    for flag, (_, text) in _STORAGE_OPTIONS.items():
        storage.add_argument(f"--{flag}", default=None, help=text)
    worker = parser.add_argument_group("worker")
    for name, field in WorkerSettings.model_fields.items():
        if name == "queues":
            continue
        env = f"DAGQ_WORKER_{name.upper()}"
        text = f"{field.description} [env {env}]"
        if field.default_factory is None and field.default is not None:
            text += f" (default: {field.default})"
        flag = "--" + name.replace("_", "-")
        if _is_bool(field.annotation):
            worker.add_argument(
                flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text
            )
        else:
            worker.add_argument(
                flag, dest=name, default=None, metavar=_metavar(field.annotation), help=text
            )
    return parser


def load_settings(args: argparse.Namespace) -> tuple[Settings, WorkerSettings]:
    """Settings from the environment, overridden by the options given on the command line."""
    storage_overrides = {
        field: getattr(args, flag)
        for flag, (field, _) in _STORAGE_OPTIONS.items()
        if getattr(args, flag) is not None
    }
    worker_overrides = {
        name: getattr(args, name)
        for name in WorkerSettings.model_fields
        if name != "queues" and getattr(args, name, None) is not None
    }
    if args.queue_args:
        worker_overrides["queues"] = list(args.queue_args)
    settings = Settings(**storage_overrides)
    return settings, WorkerSettings(**worker_overrides)


async def serve(settings: Settings, worker: WorkerSettings, devices: list[str | None]) -> int:
    """Open storage and run one agent until it shuts down."""
    from shared.storage.factory import open_storage
    from worker_agent.agent import Agent
    from worker_agent.task_user import shield_agent

    shielded = shield_agent()  # our tasks may run as our own user: hide /proc/<us> from them
    async with open_storage(settings, "worker") as storage:
        agent = Agent(worker, storage, settings.names, devices, shielded=shielded)
        return await agent.run(handle_signals=True)


def _explain(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
        for err in exc.errors()
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the worker agent; returns the process exit code (2 for a configuration error)."""
    args = build_parser().parse_args(argv)
    try:
        settings, worker = load_settings(args)
        worker.require_queues()
        devices = slot_plan(worker.gpus, worker.gpus_per_task, worker.concurrency)
    except ValidationError as exc:
        print(f"{PROG}: error: {_explain(exc)}", file=sys.stderr)
        return 2
    except DagqError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    setup_logging(worker.log_level, worker.log_format)
    try:
        return asyncio.run(serve(settings, worker, devices))
    except DagqError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
