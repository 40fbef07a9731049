"""Definition validation benchmark: what the API pays on submit (parse + validate + expand).

Every figure is measured in this one run (best of 3, wall clock):

- validate_s_100k_json: a 100,000-task fan-out/fan-in written out task by task (about 6 MiB of
  JSON; the sink depends on 9,000 tasks).
- validate_s_100k_chain: a 100,000-task chain (the longest possible dependency path).
- validate_s_10k_foreach: a 10,000-task fan-out written as one 100 x 100 foreach matrix in YAML,
  with a templated cmd and a glob condition on the fan-in.
- per_task_us_100k: validate_s_100k_json per task, in microseconds (cost is linear: compare
  per_task_us_10k, measured the same way at 10,000 tasks).
- params_overhead_10k: the 10,000-task fan-out with every command written ``echo {{ params.msg }}
  N`` (one declared parameter, filled and checked for shell-safe placement per command), as a
  ratio to the same fan-out without parameters (``validate_s_10k_params`` over the per-task figure
  at 10,000).
- validate_s_100k_json_gc_on: the same with the cyclic garbage collector left on (the compiler
  pauses it, ``shared.definition.gc_pause``); gc_pause_speedup is the ratio of the two.

Ends with ONE line of key=value pairs. Usage: python bench/bench_spec.py
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shared.definition.compiler
from shared.definition.compiler import compile_text


def fan(n: int) -> str:
    tasks = [{"name": "root", "kwargs": {"cmd": "true"}}]
    tasks += [
        {"name": f"t{i}", "kwargs": {"cmd": f"echo {i}"}, "depends_on": ["root"]}
        for i in range(n - 2)
    ]
    tasks.append(
        {"name": "sink", "kwargs": {"cmd": "true"}, "depends_on": [f"t{i}" for i in range(9000)]}
    )
    return json.dumps({"name": "fan", "tasks": tasks}, separators=(",", ":"))


def with_params(text: str) -> str:
    """The workflow of ``text`` with one parameter used in every ``echo`` command."""
    doc = json.loads(text)
    doc["params"] = {"msg": "hello"}
    for task in doc["tasks"]:
        task["kwargs"]["cmd"] = task["kwargs"]["cmd"].replace("echo ", "echo {{ params.msg }} ")
    return json.dumps(doc, separators=(",", ":"))


def chain(n: int) -> str:
    tasks = [{"name": "c0", "kwargs": {"cmd": "true"}}]
    tasks += [
        {"name": f"c{i}", "kwargs": {"cmd": "true"}, "depends_on": [f"c{i - 1}"]}
        for i in range(1, n)
    ]
    return json.dumps({"name": "chain", "tasks": tasks}, separators=(",", ":"))


FOREACH = """\
name: matrix
tasks:
  - name: prep
    kwargs: {cmd: "true"}
  - name: train
    foreach: {a: VALUES, b: VALUES}
    depends_on: [prep]
    queue: gpu
    kwargs: {cmd: "train --a {{ a }} --b {{ b }}", env: {RUN: "{{ a }}-{{ b }}"}}
  - name: eval
    depends_on: [train]
    dep_policy: all_settled
    condition: count(inputs["train*"]) >= 5000
    kwargs: {cmd: "true"}
""".replace("VALUES", str(list(range(100))))


def best_of(runs: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    text_10k, text_100k, text_chain = fan(10_000), fan(100_000), chain(100_000)
    t_10k = best_of(3, lambda: compile_text(text_10k))
    t_100k = best_of(3, lambda: compile_text(text_100k))
    t_chain = best_of(3, lambda: compile_text(text_chain))
    t_foreach = best_of(3, lambda: compile_text(FOREACH))
    text_params = with_params(text_10k)
    t_params = best_of(3, lambda: compile_text(text_params))
    assert len(compile_text(FOREACH).tasks) == 10_002
    paused = shared.definition.compiler.paused_gc
    shared.definition.compiler.paused_gc = contextlib.nullcontext  # the collector runs as usual
    try:
        t_gc_on = best_of(3, lambda: compile_text(text_100k))
    finally:
        shared.definition.compiler.paused_gc = paused
    print(
        f"validate_s_100k_json={t_100k:.3f} validate_s_100k_chain={t_chain:.3f}"
        f" validate_s_10k_foreach={t_foreach:.3f} per_task_us_10k={t_10k / 10_000 * 1e6:.1f}"
        f" per_task_us_100k={t_100k / 100_000 * 1e6:.1f} json_mib_100k={len(text_100k) / 2**20:.1f}"
        f" validate_s_100k_json_gc_on={t_gc_on:.3f} gc_pause_speedup={t_gc_on / t_100k:.2f}"
        f" validate_s_10k_params={t_params:.3f} params_overhead_10k={t_params / t_10k:.2f}"
    )


if __name__ == "__main__":
    main()
