"""``--param NAME=VALUE`` (repeatable) of ``dagq submit`` and ``dagq validate``: the workflow's
parameters as text, read by the API's compiler as each parameter's declared type."""

from __future__ import annotations

import argparse

PARAM_HELP = (
    "set a workflow parameter (declared in params:); repeat for several. The value is read as"
    " the parameter's type: a number (3, 0.01), a bool (true, false) or text"
)


def add_param_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--param",
        dest="params",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=PARAM_HELP,
    )


def parse_params(items: list[str]) -> dict[str, str] | None:
    """``{NAME: VALUE}`` of the ``--param`` options (None: none given); DagqError (exit 2) for
    one without ``=`` or a name given twice."""
    from shared.errors import DagqError

    if not items:
        return None
    values: dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        name = name.strip()
        if not equals or not name:
            raise DagqError(f"--param must be NAME=VALUE (--param lr=0.01), not {item!r}")
        if name in values:
            raise DagqError(f"--param {name} is given twice: give each parameter once")
        values[name] = value
    return values
