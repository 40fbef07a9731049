"""The committed JSON Schema is the one the models generate, and it describes the format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from shared.definition.schema import SCHEMA_PATH, render_schema, workflow_json_schema

ROOT = Path(__file__).resolve().parents[2]


def test_committed_schema_is_up_to_date() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render_schema(), (
        "shared/definition/schema/workflow.schema.json is stale:"
        " run `python -m shared.definition.schema`"
    )


def test_schema_check_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "shared.definition.schema", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_schema_describes_the_format() -> None:
    schema = workflow_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["name", "tasks"]
    assert schema["additionalProperties"] is False
    task = schema["$defs"]["TaskSpec"]
    assert task["additionalProperties"] is False
    assert set(task["required"]) == {"name", "kwargs"}
    assert {"foreach", "retry", "queue_timeout_s", "condition", "dep_policy"} <= set(
        task["properties"]
    )
    assert schema["$defs"]["TaskKwargs"]["required"] == ["cmd"]
    # Field docstrings become descriptions, so editors can show them.
    assert "shell-quoted" in schema["$defs"]["TaskKwargs"]["properties"]["cmd"]["description"]
    json.dumps(schema)  # plain JSON
