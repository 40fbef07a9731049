"""How the API commands reach the API, and how their errors become messages and exit codes."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from shared.cli.exitcodes import ExitCode

if TYPE_CHECKING:
    from shared.client import Client

Handler = Callable[[argparse.Namespace], int]


def api_options() -> argparse.ArgumentParser:
    """A parent parser with the options every API command takes."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("API connection")
    group.add_argument(
        "--api-url",
        metavar="URL",
        help="base URL of the dagq API (default: $DAGQ_API_URL, then the config file, then"
        " http://127.0.0.1:7071)",
    )
    group.add_argument(
        "--api-key",
        metavar="KEY",
        help="function key, sent as x-functions-key (default: $DAGQ_API_KEY, then the config file)",
    )
    group.add_argument(
        "--config",
        metavar="FILE",
        help="config file with api_url / api_key (default: $DAGQ_CONFIG, then"
        " ~/.config/dagq/config.toml)",
    )
    return parent


def open_client(args: argparse.Namespace) -> Client:
    """A client configured from the command line, the environment and the config file."""
    from shared.client import Client

    return Client(args.api_url, args.api_key, config_path=args.config)


def report_errors(handler: Handler) -> Handler:
    """Run ``handler``; print any dagq error as a message (never a traceback) and map it to an
    exit code."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        # Imported here, not at module level: `dagq --help` stays fast.
        try:
            import shared.client  # noqa: F401  (its dependencies are the CLI's)
        except ModuleNotFoundError as exc:
            print(
                f"dagq: this command needs the CLI's dependencies ({exc.name} is missing):"
                " pip install 'dagq[cli]' (or `make install` in the repository)",
                file=sys.stderr,
            )
            return ExitCode.USAGE
        from shared.cli.terminal import for_stderr
        from shared.client.errors import ApiError, ApiUnreachableError, WaitTimeoutError
        from shared.errors import DagqError

        try:
            return handler(args)
        except ApiError as exc:
            print(for_stderr(f"dagq: {exc.describe()}"), file=sys.stderr)
            _json_error(args, exc.extra or {
                "status": exc.status, "title": exc.title, "detail": exc.detail,
                "errors": exc.errors,
            })  # fmt: skip
            if exc.is_not_found:
                return ExitCode.NOT_FOUND
            if exc.is_invalid_definition:
                return ExitCode.USAGE
            return ExitCode.API_ERROR
        except ApiUnreachableError as exc:
            print(for_stderr(f"dagq: {exc}"), file=sys.stderr)
            return ExitCode.API_ERROR
        except WaitTimeoutError as exc:
            print(for_stderr(f"dagq: {exc}"), file=sys.stderr)
            return ExitCode.TIMEOUT
        except DagqError as exc:
            print(for_stderr(f"dagq: {exc}"), file=sys.stderr)
            _json_error(args, {"title": type(exc).__name__, "detail": str(exc)})
            return ExitCode.USAGE
        except KeyboardInterrupt:
            print("dagq: interrupted (the workflow keeps running)", file=sys.stderr)
            return ExitCode.INTERRUPTED
        except BrokenPipeError:
            # `dagq logs ... | head`: the reader left; that is not an error of ours.
            _silence_stdout()
            return ExitCode.OK
        except Exception as exc:
            # A bug of ours or a surprise from a library: say so in one line; DAGQ_DEBUG=1
            # shows the traceback.
            if os.environ.get("DAGQ_DEBUG"):
                raise
            print(
                for_stderr(
                    f"dagq: unexpected error: {type(exc).__name__}: {exc}"
                    " (set DAGQ_DEBUG=1 to see the traceback, and please report it)"
                ),
                file=sys.stderr,
            )
            return ExitCode.API_ERROR

    return run


def _json_error(args: argparse.Namespace, problem: dict[str, object]) -> None:
    """With ``--json``, the error as one JSON document on stdout too (``{"error": problem}``),
    so a script reading stdout sees what went wrong."""
    if getattr(args, "json", False):
        import json

        print(json.dumps({"error": problem}, ensure_ascii=False, default=str))


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
