"""Pass 6, acyclic: the dependencies make no cycle (one cycle is reported, with its tasks)."""

from __future__ import annotations

from collections import deque

from shared.definition.compilation import Compilation


def check_acyclic(c: Compilation) -> None:
    """Kahn's algorithm over written tasks (expansions share their group's dependencies)."""
    written, owner = c.written, c.owner
    parents = [[owner[n].index for n in w.deps] for w in written]
    children: list[list[int]] = [[] for _ in written]
    indegree = [len(p) for p in parents]
    for child, ps in enumerate(parents):
        for p in ps:
            children[p].append(child)
    ready = deque(i for i, d in enumerate(indegree) if d == 0)
    done = 0
    while ready:
        node = ready.popleft()
        done += 1
        for child in children[node]:
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    if done == len(written):
        return
    # Every task left has a parent left: walk parents until one repeats.
    order: list[int] = []
    position: dict[int, int] = {}
    node = next(i for i, d in enumerate(indegree) if d > 0)
    while node not in position:
        position[node] = len(order)
        order.append(node)
        node = next(p for p in parents[node] if indegree[p] > 0)
    names = [written[i].spec.name for i in order[position[node] :]]
    chain = ", which depends on ".join(repr(n) for n in [*names, names[0]])
    first = written[order[position[node]]]
    c.issues.add(
        f"{first.loc}.depends_on",
        f"dependency cycle: {chain} (tasks in the cycle: {', '.join(names)})",
        first.spec.name,
    )
