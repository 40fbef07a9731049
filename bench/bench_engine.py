"""Engine and codec benchmark: drive fan-out/fan-in workflows in memory, measure the state blob.

A fan-out/fan-in of N tasks is 1 root -> N-2 leaves -> 1 sink. It is driven from activation to
completion with a simulated clock: every dispatched attempt completes after a random duration of
1-600 s (seeded), and completions are applied in the order they finish, each as a
TaskCompletedEvent built on the spot (building the events is part of the measured time), with a
worker name (one of 8) and the worker's conventional log blob name, as real workers report them.

Prints progress lines, then ONE line of key=value pairs:
  drive_s_10k, drive_s_100k      activate -> WorkflowFinished, wall time (targets: < 1 s, < 10 s)
  state_bytes_1k/_10k/_100k      encoded state blob of the completed workflow (target 1k: <= 4 KB)
  codec_ms_100k                  encode + decode of the 100k state (best of 3)
  def_bytes_100k, def_ms_100k    definition blob size, encode + decode time
  cascade_s_100k                 upstream_failed cascade down a 100,000-task chain
  drive_s_10k_dynamic            the same 10k fan-out written as a dynamic fan-out: the root's
                                 output lists 9,998 items, ``foreach_from`` expands them when it
                                 completes (the expansion is part of the measured time)
  dynamic_vs_static_10k          drive_s_10k_dynamic / drive_s_10k (target: <= 2)
  state_bytes_10k_dynamic        its completed state blob (the list is kept in the state)
  ratios against the targets. ai4s-jobq's figures are printed as what they are, references
  measured elsewhere (not in this run, so no ratio is made of them): its 10k drive took ~55 s on
  this kind of machine when dagq was designed (144 s on another day), its state blobs ~8.7 KB
  (1k) and ~92 KB (10k).

Usage: .venv/bin/python bench/bench_engine.py [--quick]   (--quick skips the 100k runs)
"""

from __future__ import annotations

import heapq
import random
import sys
import time

from shared.codec.definition import decode_definition, encode_definition
from shared.codec.state import decode_state, encode_state
from shared.definition.workflow import CompiledWorkflow, ExpandFrom, TaskDef
from shared.engine import apply, new_state
from shared.engine.commands import Command, Dispatch, WorkflowFinished
from shared.engine.state import RuntimeState
from shared.messages import ActivateEvent, OutputRef, TaskCompletedEvent, TaskFailedEvent
from shared.names import ResourceNames
from shared.states import WorkflowStatus

AI4S_DRIVE_S_10K = 55.0
AI4S_STATE_BYTES_1K = 8700
AI4S_STATE_BYTES_10K = 92000
TARGET_DRIVE_S_10K = 1.0
TARGET_DRIVE_S_100K = 10.0
TARGET_STATE_BYTES_1K = 4096
START = 1_767_225_600.0  # a fixed epoch second: results do not depend on the day
INCARNATION = 3_141_592_653
"""A workflow submitted today has one (10 digits: as large as they come)."""


def fan_workflow(n: int) -> CompiledWorkflow:
    leaves = n - 2
    tasks = [TaskDef(name="root", cmd="prep", queue="cpu")]
    tasks += [
        TaskDef(name=f"leaf-{i}", cmd="work", queue="gpu", parents=(0,)) for i in range(leaves)
    ]
    tasks.append(
        TaskDef(name="sink", cmd="reduce", queue="cpu", parents=tuple(range(1, leaves + 1)))
    )
    return CompiledWorkflow.of(f"fan-{n}", tasks)


def dynamic_fan_workflow(
    n: int,
) -> tuple[CompiledWorkflow, dict[str, OutputRef], dict[str, object]]:
    """``fan_workflow(n)`` as a dynamic fan-out (1 root -> n-2 expansions -> 1 sink, plus the
    foreach_from task itself), with the root's output that lists the items."""
    tasks = [
        TaskDef(name="root", cmd="prep", queue="cpu"),
        TaskDef(
            name="leaf",
            cmd="work --shard {{ item }}",
            queue="gpu",
            parents=(0,),
            expand=ExpandFrom(0, ("shards",), n),
        ),
        TaskDef(name="sink", cmd="reduce", queue="cpu", parents=(1,)),
    ]
    items = [f"shard-{i:05d}" for i in range(n - 2)]
    # As the coordinator hands a blob output that feeds a foreach_from to the engine: read.
    output = OutputRef(blob="bench/root/1/output.json", size=14 * n)
    lists = {"bench/root/1/output.json": {"shards": items}}
    return CompiledWorkflow.of(f"dynamic-fan-{n}", tasks), {"root": output}, lists


def drive(
    wf: CompiledWorkflow,
    seed: int = 42,
    outputs: dict[str, OutputRef] | None = None,
    lists: dict[str, object] | None = None,
) -> tuple[float, RuntimeState]:
    """Activate and complete every dispatched attempt (with ``outputs`` for the tasks named
    there); return (seconds, final state)."""
    rng = random.Random(seed)
    finishing: list[tuple[float, int, Dispatch, float]] = []
    sequence = 0

    def schedule(commands: list[Command], now: float) -> bool:
        nonlocal sequence
        done = False
        for command in commands:
            if isinstance(command, Dispatch):
                sequence += 1
                end = now + rng.uniform(1.0, 600.0)
                heapq.heappush(finishing, (end, sequence, command, now))
            elif isinstance(command, WorkflowFinished):
                done = command.status is WorkflowStatus.COMPLETED
        return done

    begin = time.perf_counter()
    state = new_state(wf, "bench", START, incarnation=INCARNATION)
    done = schedule(apply(wf, state, ActivateEvent(workflow_id="bench"), START), START)
    while finishing:
        end, _, command, started = heapq.heappop(finishing)
        event = TaskCompletedEvent(
            workflow_id="bench",
            task=command.name,
            attempt=command.attempt,
            incarnation=INCARNATION,
            started_at=started,
            finished_at=end,
            worker=f"vm-{sequence % 8}",
            log_blob=ResourceNames.log_blob("bench", command.name, command.attempt),
            output=outputs.get(command.name) if outputs else None,
        )
        done = schedule(apply(wf, state, event, end, lists=lists), end) or done
    elapsed = time.perf_counter() - begin
    assert done, state.counts()
    assert state.status is WorkflowStatus.COMPLETED
    return elapsed, state


def codec_ms(state: RuntimeState, wf: CompiledWorkflow) -> tuple[float, int]:
    best = float("inf")
    size = 0
    for _ in range(3):
        begin = time.perf_counter()
        data = encode_state(state)
        decode_state(data, wf)
        best = min(best, time.perf_counter() - begin)
        size = len(data)
    return best * 1000.0, size


def definition_ms(wf: CompiledWorkflow) -> tuple[float, int]:
    begin = time.perf_counter()
    data = encode_definition(wf)
    decode_definition(data)
    return (time.perf_counter() - begin) * 1000.0, len(data)


def cascade_s(n: int) -> float:
    tasks = [
        TaskDef(name=f"t{i}", cmd="x", queue="cpu", parents=(i - 1,) if i else ()) for i in range(n)
    ]
    wf = CompiledWorkflow.of("chain", tasks)
    state = new_state(wf, "bench", START)
    apply(wf, state, ActivateEvent(workflow_id="bench"), START)
    failure = TaskFailedEvent(workflow_id="bench", task="t0", attempt=1, finished_at=START + 1)
    begin = time.perf_counter()
    apply(wf, state, failure, START + 1)
    elapsed = time.perf_counter() - begin
    assert state.status is WorkflowStatus.FAILED
    return elapsed


def main() -> None:
    quick = "--quick" in sys.argv
    results: dict[str, str] = {}

    _, state_1k = drive(fan_workflow(1_000))
    results["state_bytes_1k"] = str(len(encode_state(state_1k)))
    print(f"1k: state {results['state_bytes_1k']} B", flush=True)

    wf_10k = fan_workflow(10_000)
    drive_10k, state_10k = drive(wf_10k)
    results["drive_s_10k"] = f"{drive_10k:.3f}"
    results["state_bytes_10k"] = str(len(encode_state(state_10k)))
    print(f"10k: drive {drive_10k:.3f} s, state {results['state_bytes_10k']} B", flush=True)

    # Static and dynamic, best of 3 each, alternating (the machine is shared: noise hits both).
    wf_dynamic, outputs, lists = dynamic_fan_workflow(10_000)
    drive_dynamic, state_dynamic = drive(wf_dynamic, outputs=outputs, lists=lists)
    for _ in range(2):
        drive_10k = min(drive_10k, drive(wf_10k)[0])
        drive_dynamic = min(drive_dynamic, drive(wf_dynamic, outputs=outputs, lists=lists)[0])
    results["drive_s_10k"] = f"{drive_10k:.3f}"
    assert len(state_dynamic) == 10_001
    results["drive_s_10k_dynamic"] = f"{drive_dynamic:.3f}"
    results["dynamic_vs_static_10k"] = f"{drive_dynamic / drive_10k:.2f}"
    results["state_bytes_10k_dynamic"] = str(len(encode_state(state_dynamic)))
    print(
        f"10k dynamic: drive {drive_dynamic:.3f} s ({drive_dynamic / drive_10k:.2f}x static),"
        f" state {results['state_bytes_10k_dynamic']} B",
        flush=True,
    )

    if not quick:
        wf_100k = fan_workflow(100_000)
        drive_100k, state_100k = drive(wf_100k)
        ms, size = codec_ms(state_100k, wf_100k)
        def_ms, def_size = definition_ms(wf_100k)
        results["drive_s_100k"] = f"{drive_100k:.3f}"
        results["state_bytes_100k"] = str(size)
        results["codec_ms_100k"] = f"{ms:.1f}"
        results["def_bytes_100k"] = str(def_size)
        results["def_ms_100k"] = f"{def_ms:.1f}"
        results["cascade_s_100k"] = f"{cascade_s(100_000):.3f}"
        print(f"100k: drive {drive_100k:.3f} s, state {size} B, codec {ms:.1f} ms", flush=True)
        results["target_ratio_drive_100k"] = f"{drive_100k / TARGET_DRIVE_S_100K:.3f}"

    results["target_ratio_drive_10k"] = f"{drive_10k / TARGET_DRIVE_S_10K:.3f}"
    results["target_ratio_state_1k"] = (
        f"{int(results['state_bytes_1k']) / TARGET_STATE_BYTES_1K:.3f}"
    )
    print(
        f"reference, not measured here: ai4s-jobq drive 10k ~{AI4S_DRIVE_S_10K:.0f} s (when dagq"
        f" was designed; 144 s on another day), state 1k ~{AI4S_STATE_BYTES_1K} B,"
        f" 10k ~{AI4S_STATE_BYTES_10K} B (its workflow coordinator, on this kind of machine)"
    )
    print(" ".join(f"{key}={value}" for key, value in results.items()))


if __name__ == "__main__":
    main()
