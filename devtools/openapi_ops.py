"""The operations endpoints' part of ``shared/api/openapi.json``, generated from their pydantic
models (``shared.ops.views``) so the document cannot drift from what the API answers.

    python -m devtools.openapi_ops      # rewrite the document's operations paths and schemas

``tests/api/test_ops_openapi.py`` checks that the document holds exactly what this generates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from shared.ops.views import WorkersView

OPENAPI_PATH = Path(__file__).resolve().parent.parent / "shared" / "api" / "openapi.json"
REF = "#/components/schemas/{model}"
PROBLEM = {"$ref": "#/components/responses/Problem"}

MODELS: tuple[type[BaseModel], ...] = (WorkersView,)


def _ok(model: type[BaseModel], description: str) -> dict[str, Any]:
    schema = {"$ref": REF.format(model=model.__name__)}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def paths() -> dict[str, Any]:
    """The operations endpoints, by path."""
    return {
        "/workers": {
            "get": {
                "operationId": "list_workers",
                "summary": "Worker agents from the registry: queues, busy slots, tasks, alive/lost",
                "responses": {"200": _ok(WorkersView, "The registered workers")},
            }
        },
    }


def schemas() -> dict[str, Any]:
    """The component schemas of the operations models (and the models they use)."""
    _, top = models_json_schema([(m, "serialization") for m in MODELS], ref_template=REF)
    defs: dict[str, Any] = top.get("$defs", {})
    return defs


def update(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the operations paths and schemas replaced by freshly generated ones."""
    document["paths"].update(paths())
    document["components"]["schemas"].update(schemas())
    return document


def main() -> None:
    document = json.loads(OPENAPI_PATH.read_text())
    OPENAPI_PATH.write_text(json.dumps(update(document), indent=2) + "\n")


if __name__ == "__main__":
    main()
