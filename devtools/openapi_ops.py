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

from shared.ops.views import DoctorReport, PurgedView, PurgeReport, WorkersView

OPENAPI_PATH = Path(__file__).resolve().parent.parent / "shared" / "api" / "openapi.json"
REF = "#/components/schemas/{model}"
PROBLEM = {"$ref": "#/components/responses/Problem"}

MODELS: tuple[type[BaseModel], ...] = (WorkersView, PurgedView, PurgeReport, DoctorReport)
ID_PARAMETER = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "Workflow id",
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
    "example": "20261201-101500-ab12cd",  # the example every path's id has (tests/api/test_fuzz.py)
}


def _query(name: str, schema: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": schema, **extra}


PURGE_PARAMETERS = [
    _query(
        "older_than_s",
        {"type": "number", "minimum": 0},
        "Purge workflows that finished more than this many seconds ago",
        required=True,
    ),
    _query("status", {"type": "string"}, "Comma-separated: completed, failed, cancelled"),
    _query("dry_run", {"type": "boolean"}, "List what would be purged; delete nothing"),
    _query("limit", {"type": "integer", "minimum": 1, "maximum": 1000}, "Index rows per step"),
    _query("next", {"type": "string"}, "The 'next' of the previous step"),
]


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
        "/doctor": {
            "get": {
                "operationId": "doctor",
                "summary": "Check the deployment (and one workflow): findings, each with its fix",
                "parameters": [_query("id", ID_PARAMETER["schema"], "Also check this workflow")],
                "responses": {
                    "200": _ok(
                        DoctorReport, "The report; 'healthy' says whether it found problems"
                    ),
                    "400": PROBLEM,
                    "404": PROBLEM,
                },
            }
        },
        "/workflows/{id}": {
            "delete": {
                "operationId": "delete_workflow",
                "summary": "Purge a finished workflow: definition, state, index row, outputs, logs",
                "parameters": [ID_PARAMETER],
                "responses": {
                    "200": _ok(PurgedView, "Purged (also when an interrupted purge was finished)"),
                    "400": PROBLEM,
                    "404": PROBLEM,
                    "409": PROBLEM,
                },
            }
        },
        "/purge": {
            "post": {
                "operationId": "purge_workflows",
                "summary": "One step of a bulk purge of workflows finished long ago",
                "parameters": PURGE_PARAMETERS,
                "responses": {"200": _ok(PurgeReport, "What this step purged"), "400": PROBLEM},
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
    for path, operations in paths().items():
        document["paths"].setdefault(path, {}).update(operations)
    document["components"]["schemas"].update(schemas())
    return document


def main() -> None:
    document = json.loads(OPENAPI_PATH.read_text())
    OPENAPI_PATH.write_text(json.dumps(update(document), indent=2) + "\n")


if __name__ == "__main__":
    main()
