"""Dynamic fan-out (``foreach_from``) end to end: the real app (local host, coordinator on the queue
trigger) and real worker agents on Azurite, driven through the CLI."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable

from shared.cli.exitcodes import ExitCode
from tests.support.stack import EXAMPLES, Result, Stack

Dagq = Callable[..., Result]

# 120 items of ~50 characters: about 6 KB of JSON, more than an inline output (4 KiB), so the list
# travels as a blob output and the coordinator reads it before expanding.
WIDE = """
name: wide
default_queue: cpu
tasks:
  - name: make_list
    kwargs:
      cmd: >-
        python3 -c 'import json, os; items = ["item-%03d-" % i + "x" * 40 for i in range(120)];
        json.dump({"items": items}, open(os.environ["DAGQ_OUTPUT"], "w"))'
  - name: each
    depends_on: [make_list]
    foreach_from: inputs.make_list.items
    kwargs:
      cmd: |
        test "$DAGQ_VAR_item" = {{ item }} && echo '{"seen": 1}' > "$DAGQ_OUTPUT"
  - name: count
    depends_on: [each]
    condition: count(inputs["each*"]) == 120
    kwargs: {cmd: echo all 120 arrived}
"""

BAD = """
name: bad-list
default_queue: cpu
tasks:
  - name: make_list
    kwargs:
      cmd: |
        echo '{"items": "not a list"}' > "$DAGQ_OUTPUT"
  - name: each
    depends_on: [make_list]
    foreach_from: inputs.make_list.items
    kwargs:
      cmd: echo {{ item }}
"""


def _id(result: Result) -> str:
    return result.out.splitlines()[0].strip()


def test_the_shards_example_expands_and_merges(dagq: Dagq, stack: Stack) -> None:
    done = dagq("submit", str(EXAMPLES / "shards.yaml"), "--wait", "--timeout", "120")
    assert done.code == ExitCode.OK, done.out + done.err + stack.diagnostics()
    workflow_id = _id(done)
    body = json.loads(dagq("status", workflow_id, "--json").out)
    expanded = sorted(name for name in body["tasks"] if name.startswith("process."))
    assert len(expanded) == 7  # 1000 rows in shards of 150
    assert "process.name=shard-0.start=0.stop=150" in expanded
    assert body["total"] == 10  # list_shards, process, 7 expansions, merge
    assert body["counts"]["completed"] == 10
    task = "process.name=shard-6.start=900.stop=1000"
    with urllib.request.urlopen(f"{stack.url}/workflows/{workflow_id}/tasks/{task}") as answer:
        detail = json.loads(answer.read())
    assert detail["group"] == "process"
    assert detail["params"] == {"item": {"name": "shard-6", "start": 900, "stop": 1000}}
    assert "--start 900 --stop 1000" in detail["cmd"]
    outputs = json.loads(dagq("outputs", workflow_id, "--json").out)
    assert outputs["merge"] == {"shards": 7, "rows": 1000, "sum": sum(i * i for i in range(1000))}
    assert outputs["process.name=shard-6.start=900.stop=1000"]["shard"] == "shard-6"
    assert "process.name=shard-3.start=450.stop=600" in dagq("status", workflow_id).out
    # The dashboard's graph is the running workflow's (it grew), so it is not cached.
    with urllib.request.urlopen(f"{stack.url}/workflows/{workflow_id}/graph") as answer:
        assert answer.headers["Cache-Control"] == "no-store"
        graph = json.loads(answer.read())
    names = [t["name"] for t in graph["tasks"]]
    assert len(names) == 10
    merge = graph["tasks"][names.index("merge")]
    assert sorted(names[p] for p in merge["parents"]) == expanded


def test_a_list_in_a_blob_output_expands(dagq: Dagq, stack: Stack, tmp_path: object) -> None:
    path = stack.logs / "wide.yaml"
    path.write_text(WIDE)
    done = dagq("submit", str(path), "--wait", "--timeout", "180")
    assert done.code == ExitCode.OK, done.out + done.err + stack.diagnostics()
    body = json.loads(dagq("status", _id(done), "--json").out)
    assert body["total"] == 123
    assert body["tasks"]["count"]["state"] == "completed"


def test_a_list_that_is_not_a_list_fails_the_expanding_task(dagq: Dagq, stack: Stack) -> None:
    path = stack.logs / "bad.yaml"
    path.write_text(BAD)
    done = dagq("submit", str(path), "--wait", "--timeout", "60")
    assert done.code == ExitCode.FAILED, done.out + done.err + stack.diagnostics()
    body = json.loads(dagq("status", _id(done), "--json").out)
    each = body["tasks"]["each"]
    assert each["state"] == "failed"
    assert each["error"] == "cannot expand: inputs.make_list.items is a string, not a list"
    assert body["tasks"]["make_list"]["state"] == "completed"
