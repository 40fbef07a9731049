"""``python -m devtools.localhost``: ``func start`` where Core Tools are installed, else the
built-in host (and, with ``--instances N``, more instances of it)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import sys
from pathlib import Path

from devtools.instances import start_instances, stop_instances
from devtools.localhost.config import DEFAULT_PORT, REPO_ROOT, HostError, load_local_settings
from devtools.localhost.host import HostOptions, serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.localhost",
        description="Run function_app.py locally: `func start` when Core Tools are installed, else"
        " a built-in host that serves HTTP triggers, polls queue triggers and fires timers with"
        " host.json semantics.",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help="HTTP port (default 7071; 0 picks a free one)")  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--app-dir", type=Path, default=REPO_ROOT,
                        help="folder of function_app.py and host.json (default: repo)")  # fmt: skip
    parser.add_argument("--settings", type=Path, default=None,
                        help="local.settings.json whose Values are exported when not already in"
                        " the environment (default: APP_DIR/local.settings.json)")  # fmt: skip
    parser.add_argument("--builtin", action="store_true",
                        help="use the built-in host even when `func` is installed")  # fmt: skip
    parser.add_argument("--no-queues", action="store_true", help="do not poll queue triggers")
    parser.add_argument("--no-timers", action="store_true", help="do not fire timer triggers")
    parser.add_argument("--grace-s", type=float, default=30.0,
                        help="time running invocations get on shutdown (default 30)")  # fmt: skip
    parser.add_argument(
        "--instances", type=int, default=1, metavar="N",
        help="run N instances of the app (separate processes, one storage) as Functions scales"
        " out; the others poll the queue triggers only",
    )  # fmt: skip
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    args = parser.parse_args(argv)
    if args.instances < 1:
        parser.error("--instances must be at least 1")
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # The SDKs log every request and response at INFO: only their warnings are worth reading.
    logging.getLogger("azure").setLevel(max(logging.WARNING, logging.getLogger().level))
    app_dir = args.app_dir.resolve()
    func_cli = shutil.which("func")
    if func_cli and not args.builtin:
        os.chdir(app_dir)
        command = [func_cli, "start", "--port", str(args.port or DEFAULT_PORT)]
        os.execv(func_cli, command)  # noqa: S606 - becoming `func start` is the point
    try:
        load_local_settings(args.settings or app_dir / "local.settings.json")
        options = HostOptions(
            app_dir=app_dir, host=args.host, port=args.port, queues=not args.no_queues,
            timers=not args.no_timers, grace_s=args.grace_s,
        )  # fmt: skip
        others = start_instances(args.instances - 1, app_dir, args.settings)
        try:
            asyncio.run(serve(options))
        finally:
            stop_instances(others, args.grace_s)
    except HostError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # typically: the port is taken
        print(f"error: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
