"""How the API commands reach the API, and how their errors become messages and exit codes."""

from __future__ import annotations

import argparse
import functools
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
        from shared.client import ApiError, ApiUnreachableError, WaitTimeoutError
        from shared.errors import DagqError

        try:
            return handler(args)
        except ApiError as exc:
            print(f"dagq: {exc.describe()}", file=sys.stderr)
            if exc.is_not_found:
                return ExitCode.NOT_FOUND
            if exc.is_invalid_definition:
                return ExitCode.USAGE
            return ExitCode.API_ERROR
        except ApiUnreachableError as exc:
            print(f"dagq: {exc}", file=sys.stderr)
            return ExitCode.API_ERROR
        except WaitTimeoutError as exc:
            print(f"dagq: {exc}", file=sys.stderr)
            return ExitCode.TIMEOUT
        except DagqError as exc:
            print(f"dagq: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        except KeyboardInterrupt:
            print("dagq: interrupted (the workflow keeps running)", file=sys.stderr)
            return ExitCode.INTERRUPTED
        except BrokenPipeError:
            # `dagq logs ... | head`: the reader left; that is not an error of ours.
            sys.stderr.close()
            return ExitCode.OK

    return run
