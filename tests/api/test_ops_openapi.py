"""The operations endpoints' part of the OpenAPI document is what their pydantic models generate."""

from __future__ import annotations

import copy
import json

from devtools.openapi_ops import OPENAPI_PATH, paths, schemas, update


def test_the_document_holds_the_generated_operations_paths_and_schemas() -> None:
    document = json.loads(OPENAPI_PATH.read_text())
    assert update(copy.deepcopy(document)) == document, "run: python -m devtools.openapi_ops"
    for path in paths():
        assert path in document["paths"]
    assert set(schemas()) <= set(document["components"]["schemas"])
    worker = document["components"]["schemas"]["WorkerView"]
    assert worker["properties"]["status"]["enum"] == ["alive", "lost"]
