"""A ``foreach_from`` task's ``{{ params.NAME }}`` is filled as it expands, with the run's values,
the same shell-safe way as at submit (issue 29)."""

from __future__ import annotations

from shared.codec.definition import decode_definition, encode_definition
from shared.definition.compiler import compile_text
from shared.engine.expansion import expanded

from .history import History, dispatched

DEFINITION = """
name: shards
params:
  model: base
tasks:
  - name: list_shards
    kwargs: {cmd: python3 list_shards.py}
  - name: process
    depends_on: [list_shards]
    foreach_from: inputs.list_shards.shards
    kwargs:
      cmd: "process --model {{ params.model }} --shard {{ item }}"
      env: {MODEL: "{{ params.model }}"}
"""


def test_the_expansions_get_the_run_s_values() -> None:
    wf = compile_text(DEFINITION, params={"model": "big one; rm -rf ~"})
    h = History(decode_definition(encode_definition(wf)))  # as the coordinator reads it
    h.activate()
    sent = dispatched(h.completed("list_shards", output={"shards": ["s0"]}))
    assert sent == [("process.item=s0", 1)]
    grown = expanded(h.wf, h.st)
    task = grown.tasks[grown.index["process.item=s0"]]
    assert task.cmd == "process --model 'big one; rm -rf ~' --shard s0"
    assert task.env["MODEL"] == "big one; rm -rf ~"
    assert "DAGQ_VAR_params_model" not in task.env
    assert grown.params == {"model": "big one; rm -rf ~"}
