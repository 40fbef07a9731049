"""The OpenAPI document's component schemas, generated from the response views.

``shared/api/openapi.json`` is the API's description: its paths (routes, parameters, statuses) are
written by hand, its ``components.schemas`` are generated from ``shared.views`` by this module.
After changing a view or adding one::

    python -m shared.api.openapi            # rewrite the schemas of shared/api/openapi.json
    python -m shared.api.openapi --check    # exit 1 if the committed document is not current

``tests/api/test_openapi.py`` runs the check, and checks the paths against ``function_app.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

OPENAPI_PATH = Path(__file__).with_name("openapi.json")
"""The committed document (served by ``GET /api/openapi.json``)."""

REF_TEMPLATE = "#/components/schemas/{model}"


def component_schemas() -> dict[str, Any]:
    """The JSON schemas of every response view, keyed by model name (JSON Schema 2020-12, the
    dialect of OpenAPI 3.1)."""
    from pydantic import BaseModel
    from pydantic.json_schema import models_json_schema

    from shared.views import COMPONENTS

    models: list[type[BaseModel]] = list(COMPONENTS)
    _, top = models_json_schema(
        [(model, "serialization") for model in models], ref_template=REF_TEMPLATE
    )
    schemas: dict[str, Any] = top.get("$defs", {})
    return dict(sorted(schemas.items()))


def generated(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with its component schemas regenerated from the views."""
    components = dict(document.get("components", {}))
    components["schemas"] = component_schemas()
    return {**document, "components": components}


def render(document: dict[str, Any]) -> str:
    """The document as committed: 2-space indents, a final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or, with ``--check``, verify) the component schemas of openapi.json."""
    parser = argparse.ArgumentParser(prog="python -m shared.api.openapi", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args(argv)
    current = OPENAPI_PATH.read_text(encoding="utf-8")
    wanted = render(generated(json.loads(current)))
    if args.check:
        if current != wanted:
            print(f"{OPENAPI_PATH} is stale: run python -m shared.api.openapi", file=sys.stderr)
            return 1
        return 0
    OPENAPI_PATH.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
