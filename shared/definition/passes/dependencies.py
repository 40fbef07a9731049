"""Dependencies: resolving ``depends_on`` (names and foreach groups) to task numbers within the
limits, ``dep_policy`` and ``condition`` against the parents, and the check for cycles."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from functools import partial

from shared.definition.compilation import CompilerState, Written
from shared.definition.conditions import compile_condition
from shared.errors import ConditionError
from shared.limits import MAX_DEPENDENCIES, MAX_EDGES


class DependencyResolution(CompilerState):
    """Sets each written task's ``deps`` and checks the graph they make."""

    # -- dependencies ----------------------------------------------------------------------
    def resolve_dependencies(self) -> None:
        groups = {w.spec.name: w for w in self.written if w.spec.foreach is not None}
        owner, issues = self.owner, self.issues
        edges = 0
        for w in self.written:
            task = w.spec
            if not task.depends_on:
                if task.condition is not None:
                    self.check_condition(w, [])
                continue
            w.deps, dep_error = self.resolve(w, groups)
            edges += len(w.deps) * len(w.expansions)
            if edges > MAX_EDGES:
                # Stop here: resolving costs one step per edge, and the rest cannot help.
                issues.add(
                    "tasks",
                    f"the workflow has more than {MAX_EDGES:,} dependency edges after"
                    " expansion (the limit)",
                )
                return
            if dep_error:  # with a dependency missing, these checks would only add noise
                continue
            policy = task.dep_policy
            if isinstance(policy, int) and policy > len(w.deps):
                issues.add(
                    f"{w.loc}.dep_policy",
                    f"dep_policy {policy} needs {policy} successful dependencies but the task"
                    f" has only {len(w.deps)}",
                    task.name,
                )
            if task.condition is not None:
                names = [owner[n].expansions[n - owner[n].first].name for n in w.deps]
                self.check_condition(w, names)

    def resolve(self, w: Written, groups: Mapping[str, Written]) -> tuple[list[int], bool]:
        """The task numbers ``w`` depends on, and whether a problem was reported. Stops at
        ``MAX_DEPENDENCIES``, so one task costs at most that many steps."""
        number_of, owner, issues, task = self.number_of, self.owner, self.issues, w.spec
        loc = f"{w.loc}.depends_on"
        deps: list[int] = []
        seen: dict[int, str] = {}
        dep_error = False
        for entry in task.depends_on:
            group = groups.get(entry)
            if entry == task.name:
                issues.add(loc, f"task {task.name!r} depends on itself", task.name)
                dep_error = True
                continue
            if group is not None:
                if group.broken:
                    dep_error = True
                    continue
                numbers: Sequence[int] = range(group.first, group.first + len(group.expansions))
            elif entry in number_of:
                numbers = (number_of[entry],)
            elif entry in self.unparsed:
                dep_error = True  # that task's own problems are reported already
                continue
            else:
                issues.add(loc, partial(self.unknown_dependency, entry), task.name)
                dep_error = True
                continue
            if len(deps) + len(numbers) > MAX_DEPENDENCIES:
                issues.add(
                    loc,
                    f"the task has more than {MAX_DEPENDENCIES:,} dependencies after foreach"
                    f" fan-in (the limit), counting {entry!r}",
                    task.name,
                )
                return deps, True
            for n in numbers:
                if owner[n] is w:
                    issues.add(
                        loc, f"task {task.name!r} depends on its own expansion {entry!r}", task.name
                    )
                elif n in seen:
                    dep_name = owner[n].expansions[n - owner[n].first].name
                    issues.add(loc, _listed_twice(entry, seen[n], dep_name), task.name)
                else:
                    seen[n] = entry
                    deps.append(n)
                    continue
                dep_error = True
                break
        return deps, dep_error

    def unknown_dependency(self, entry: str) -> str:
        if self._names is None:  # (built once: a definition may name thousands of unknowns)
            self._names = [
                *(w.spec.name for w in self.written if w.spec.foreach is not None),
                *self.number_of,
            ]
        return f"unknown dependency {entry!r}{self.suggester.hint(entry, self._names)}"

    def check_condition(self, w: Written, parents: Sequence[str]) -> None:
        condition = w.spec.condition
        assert condition is not None
        loc = f"{w.loc}.condition"
        if not parents:
            self.issues.add(
                loc,
                "a condition reads the outputs of dependencies, but the task has none: add"
                " depends_on or remove the condition",
                w.spec.name,
            )
            return
        try:
            compile_condition(condition, parents, self.match_budget)
        except ConditionError as exc:
            self.issues.add(loc, str(exc), w.spec.name)

    def check_acyclic(self) -> None:
        """Kahn's algorithm over written tasks (expansions share their group's dependencies)."""
        written, owner = self.written, self.owner
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
        self.issues.add(
            f"{first.loc}.depends_on",
            f"dependency cycle: {chain} (tasks in the cycle: {', '.join(names)})",
            first.spec.name,
        )


def _listed_twice(entry: str, earlier: str, dep_name: str) -> str:
    if entry == earlier:
        return f"dependency {entry!r} is listed twice"
    return f"{entry!r} and {earlier!r} both include {dep_name!r}: list each dependency once"
