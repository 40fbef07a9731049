"""The workflow definition's JSON Schema, generated from ``shared.definition.spec`` (for editors
and tools).

``shared/definition/schema/workflow.schema.json`` is committed; regenerate it after changing the
models with
``python -m shared.definition.schema`` (``--check`` exits 1 when the committed file is stale; a
test does the
same). Point an editor at it, e.g. with a first line
``# yaml-language-server: $schema=<path>/workflow.schema.json`` in a pipeline YAML file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("workflow.schema.json")
SCHEMA_ID = "https://github.com/dagq/dagq/blob/main/shared/schema/workflow.schema.json"


def workflow_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a workflow definition."""
    from shared.definition.spec import WorkflowSpec

    schema = WorkflowSpec.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "dagq workflow definition",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def render_schema() -> str:
    """The schema file's exact text."""
    return json.dumps(workflow_json_schema(), indent=2, ensure_ascii=False) + "\n"
