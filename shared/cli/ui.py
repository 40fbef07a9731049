"""``dagq ui [ID]``: open the dashboard of the configured deployment in a browser."""

from __future__ import annotations

import argparse
import os
import sys
from urllib.parse import quote

from shared.cli.connect import api_options, report_errors


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ui = commands.add_parser(
        "ui",
        parents=[api_options()],
        help="open the web dashboard (workflows, DAG, Gantt, workers) in a browser",
        description=(
            "Open the dashboard that the Functions app serves at /api/ui, for the API that"
            " --api-url / $DAGQ_API_URL / the config file names; with ID, at that workflow."
            " Prints the URL, and only the URL when no browser is available (no display, or"
            " --no-browser). The function key is never put in the URL: with function keys,"
            " paste one once in the page (API key, top right). Exit 4, with what to do, when"
            " the API does not answer (the local stack is not up: `make up`)."
        ),
    )
    ui.add_argument("id", nargs="?", help="open this workflow's run view")
    ui.add_argument(
        "--no-browser", action="store_true", help="print the URL without opening a browser"
    )
    ui.set_defaults(handler=run_ui)


def dashboard_url(api_url: str, workflow_id: str | None = None) -> str:
    """The dashboard of the API at ``api_url``, at a workflow if given."""
    fragment = f"#/runs/{quote(workflow_id, safe='')}" if workflow_id else ""
    return f"{api_url}/api/ui{fragment}"


def _has_display() -> bool:
    # Without a display, webbrowser would fall back to a text browser in this terminal.
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _check_answers(args: argparse.Namespace) -> None:
    """Raise ApiUnreachableError when nothing that is a dagq API answers (the local stack is not
    up, a wrong URL): a browser would open a page that cannot load. Any answer of the API, even
    a refusal (a function key is needed), is one."""
    import contextlib

    from shared.cli.connect import open_client
    from shared.client.errors import ApiError

    with open_client(args) as client, contextlib.suppress(ApiError):
        client.health()


@report_errors
def run_ui(args: argparse.Namespace) -> int:
    import webbrowser

    from shared.client import ClientConfig

    config = ClientConfig.resolve(args.api_url, args.api_key, config_path=args.config)
    url = dashboard_url(config.api_url, args.id)
    print(url)
    _check_answers(args)
    if config.api_key:
        print("the API uses a function key: paste it once in the page (API key, top right)")
    if args.no_browser:
        return 0
    if not _has_display() or not webbrowser.open(url):
        print("no browser available here: open the URL above", file=sys.stderr)
    return 0
