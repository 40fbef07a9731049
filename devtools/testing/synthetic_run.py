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


SHORT_ORDER = ("prepare", "zeta-tokenize", "alpha", "mid-long-task-name-for-the-evaluation-split",
               "report")  # fmt: skip
"""The definition order of ``sub_second``: neither alphabetical nor the order tasks finish."""


def _graph(name: str, names: tuple[str, ...], parents: list[list[int]]) -> dict[str, Any]:
    tasks = [
        {"name": n, "queue": "cpu", "group": None, "parents": p}
        for n, p in zip(names, parents, strict=True)
    ]
    return {"id": name, "name": name, "tasks": tasks}


WORKERS = ("worker-a100-westeurope-0001", "worker-a100-westeurope-0002-spot")
"""Worker ids longer than the Gantt chart's old 20-character lane labels."""


def sub_second() -> tuple[dict[str, Any], dict[str, Any]]:
    """The graph and the view of a finished run of sub-second tasks (one of them 1 ms, one on a
    worker of its own): ``prepare -> (zeta-tokenize, alpha, mid-…) -> report``."""
    names = SHORT_ORDER
    parents: list[list[int]] = [[], [0], [0], [0], [1, 2, 3]]
    graph = _graph("short", names, parents)
    times = {  # queued, started, finished: seconds after submission
        "prepare": (0.010, 0.020, 0.120),
        "zeta-tokenize": (0.125, 0.130, 0.150),
        "alpha": (0.125, 0.131, 0.132),
        "mid-long-task-name-for-the-evaluation-split": (0.125, 0.140, 0.400),
        "report": (0.405, 0.410, 0.450),
    }
    tasks = {
        n: _task("completed", 1, T0 + q, T0 + s, T0 + f, WORKERS[n == "alpha"])
        for n, (q, s, f) in times.items()
    }
    view = {
        "id": "short", "name": "short", "status": "completed", "run": 1, "created_at": T0,
        "updated_at": T0 + 0.46, "finished_at": T0 + 0.46, "cancel_requested": False,
        "error": None, "total": len(names), "tasks": tasks, "counts": {"completed": len(names)},
    }  # fmt: skip
    return graph, view


def crossing() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two chains, ``a1 -> a2`` and ``b1 -> b2``, defined as a1, b1, b2, a2: the definition's
    order in the second column (b2 above a2) would cross the edges."""
    names, parents = ("a1", "b1", "b2", "a2"), [[], [], [1], [0]]
    graph = _graph("crossing", names, parents)
    pending = _task("completed", 1, T0, T0, T0, WORKERS[0]) | {
        "state": "pending", "attempt": 0, "queued_at": None, "started_at": None,
        "finished_at": None, "exit_code": None, "worker": None,
    }  # fmt: skip
    view = {
        "id": "crossing", "name": "crossing", "status": "running", "run": 1, "created_at": T0,
        "updated_at": T0, "finished_at": None, "cancel_requested": False, "error": None,
        "total": 4, "tasks": dict.fromkeys(names, pending), "counts": {"pending": 4},
    }  # fmt: skip
    return graph, view
