"""``make rbac-check``'s verdict on a run's storage calls, and docs/permissions.md.

    python -m devtools.permissions check USAGE...           # exit 1 on any finding
    python -m devtools.permissions docs --write USAGE...    # regenerate docs/permissions.md

USAGE files are what processes running with ``DAGQ_RBAC_ENFORCE`` and ``DAGQ_RBAC_USAGE``
appended (``shared.storage.rbac.usage``). ``check`` fails, naming identity, operation and
resource, on a call the deployment's roles refused (infra/ lacks a role the code needs); naming
the assignment, on a role for dagq's code that no call used (least privilege); and on a call
docs/permissions.md does not list.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shared.storage.rbac.model import deployed_model
from shared.storage.rbac.report import (
    missing_rows,
    parse_rows,
    refusals,
    render,
    row_of,
    unused,
)
from shared.storage.rbac.usage import Use, read_uses

DOC = Path(__file__).resolve().parents[1] / "docs" / "permissions.md"


def findings(uses: list[Use], document: str, *, listed: bool = True) -> list[str]:
    """Everything wrong with a run's uses: each a line that says what and where. ``listed``:
    also every call the document does not list (timing decides whether a run makes some calls,
    such as a heartbeat's, so the scenarios' test leaves that to ``make rbac-check``)."""
    model = deployed_model()
    found = [f"refused: {use.refused} (from {use.caller})" for use in refusals(uses)]
    found += [
        f"never used: {g.resource} ({g.identity}, {g.role} on {g.scope}): no storage call of"
        " dagq's needed it; remove it from infra/modules/identity.bicep (least privilege), or"
        " say who needs it (tests/infra/permission_model.py OUTSIDE_DAGQ)"
        for g in unused(model, uses)
    ]
    if render(model, parse_rows(document)) != document:
        found.append(
            "docs/permissions.md does not show infra/'s role assignments as they are"
            " (python -m devtools.permissions docs --write USAGE)"
        )
    found += (
        []
        if not listed
        else [
            f"not in docs/permissions.md: {' | '.join(row)} (python -m devtools.permissions docs"
            " --write USAGE)"
            for row in missing_rows(document, uses)
        ]
    )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["check", "docs"])
    parser.add_argument("usage", nargs="+", type=Path, help="usage files of the run")
    parser.add_argument("--write", action="store_true", help="docs: write docs/permissions.md")
    parser.add_argument(
        "--fresh", action="store_true", help="docs: list this run's calls only (drop the others)"
    )
    args = parser.parse_args(argv)
    uses = [use for path in args.usage for use in read_uses(path)]
    document = DOC.read_text() if DOC.exists() else ""
    if args.command == "docs":
        kept = set() if args.fresh else parse_rows(document)
        rows = kept | {row_of(u) for u in uses if u.refused is None}
        text = render(deployed_model(), rows)
        if args.write:
            DOC.write_text(text)
        else:
            sys.stdout.write(text)
        return 0
    problems = findings(uses, document)
    for line in problems:
        print(line)
    if not problems:
        print(f"rbac-check: {len(uses)} kinds of storage call, all within infra/'s roles")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
