"""Made-up API answers of a run, for browser tests and the dashboard benchmark (no stack needed)."""

from __future__ import annotations

from typing import Any

T0 = 1_800_000_000.0
SLOTS = 8


def _task(state: str, attempt: int, queued: float, started: float, finished: float | None,
          worker: str) -> dict[str, Any]:  # fmt: skip
    return {
        "state": state, "attempt": attempt, "queue": "cpu", "queued_at": queued,
        "started_at": started, "finished_at": finished, "error": None, "worker": worker,
        "exit_code": 0 if finished is not None else None,
    }  # fmt: skip


def fan_out(n: int, *, merge_attempt: int, done: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The graph and the workflow view of ``split -> shard ×n -> merge``: every shard finished on
    one of 8 workers; ``merge`` runs attempt ``merge_attempt``, finished when ``done``."""
    graph: dict[str, Any] = {"id": "synthetic", "name": "synthetic", "tasks": []}
    graph["tasks"].append({"name": "split", "queue": "cpu", "group": None, "parents": []})
    for i in range(n):
        graph["tasks"].append({"name": f"s.{i}", "queue": "cpu", "group": "s", "parents": [0]})
    merge_parents = list(range(1, n + 1))
    graph["tasks"].append(
        {"name": "merge", "queue": "cpu", "group": None, "parents": merge_parents}
    )
    tasks: dict[str, Any] = {}
    for i, task in enumerate(graph["tasks"][:-1]):
        start = T0 + 1 + (i // SLOTS) * 0.05
        tasks[task["name"]] = _task("completed", 1, T0 + 0.5, start, start + 0.05, f"w{i % SLOTS}")
    end = T0 + 2 + n * 0.05 / SLOTS + merge_attempt
    tasks["merge"] = _task(
        "completed" if done else "running", merge_attempt, end, end + 0.2,
        end + 0.7 if done else None, "w0",
    )  # fmt: skip
    total = n + 2
    view = {
        "id": "synthetic", "name": "synthetic", "status": "completed" if done else "running",
        "run": 1, "created_at": T0, "updated_at": end + 1, "finished_at": end + 1 if done else None,
        "cancel_requested": False, "error": None, "total": total, "tasks": tasks,
        "counts": {"completed": total - (0 if done else 1), "running": 0 if done else 1},
    }  # fmt: skip
    return graph, view
