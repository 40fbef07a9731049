"""The state of one compilation: the limits, the issues found so far, and the tables of tasks.

``CompilerState`` is the base the checking steps (``shared.definition.passes.values``,
``shared.definition.passes.expansion``, ``shared.definition.passes.dependencies``,
``shared.definition.passes.foreach_from``)
build on; ``shared.definition.compiler`` puts them together.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from shared.definition.conditions import MatchBudget
from shared.definition.foreach import Params
from shared.definition.spec import TaskSpec, WorkflowSpec
from shared.definition.suggestions import Suggester
from shared.definition.workflow import ExpandFrom
from shared.errors import Issue
from shared.limits import MAX_EXPANDED_BYTES, MAX_EXPANSIONS, MAX_GLOB_MATCHES

# -- limits (documented in docs/workflow-format.md) -------------------------------------------
MAX_REPEATS_PER_LOCATION = 3
"""Issues shown per location before the rest are summarised (one bad value x 10,000 expansions)."""


ENV_NAME_RE = re.compile(r"^[^=\x00]+$")
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


class Issues:
    """Collects issues, summarising a location repeated by many expansions."""

    def __init__(self) -> None:
        self.items: list[Issue] = []
        self._per_location: dict[str, int] = defaultdict(int)
        self._first_task: dict[str, str | None] = {}

    def add(self, location: str, message: str | Callable[[], str], task: str | None = None) -> None:
        """Record an issue; a callable message is only built if the issue is shown (hints)."""
        self._per_location[location] += 1
        if self._per_location[location] <= MAX_REPEATS_PER_LOCATION:
            text = message if isinstance(message, str) else message()
            self.items.append(Issue(location, text, task))
            self._first_task.setdefault(location, task)

    def finish(self) -> list[Issue]:
        """The issues, with one summary line per location shown only in part."""
        for location, count in self._per_location.items():
            extra = count - MAX_REPEATS_PER_LOCATION
            if extra > 0:
                task = self._first_task[location]
                self.items.append(Issue(location, f"... and {extra} more like the above", task))
        return self.items

    def __bool__(self) -> bool:
        return bool(self.items)


class Expansion:
    """The values of one final task before its parents are known."""

    __slots__ = ("cmd", "cwd", "env", "name", "params", "queue")

    def __init__(
        self,
        name: str,
        cmd: str,
        env: dict[str, str],
        cwd: str | None,
        queue: str,
        params: Params | None,
    ) -> None:
        self.name = name
        self.cmd = cmd
        self.env = env
        self.cwd = cwd
        self.queue = queue
        self.params = params


class Written:
    """One task as written, with what the compiler derived from it."""

    __slots__ = ("broken", "deps", "dynamic", "expansions", "first", "index", "loc", "spec")

    def __init__(self, index: int, spec: TaskSpec, loc: str) -> None:
        self.index = index
        self.spec = spec
        self.loc = loc
        """``tasks.<name>`` (or ``tasks[i]`` when the name itself is invalid)."""
        self.expansions: list[Expansion] = []
        """One per final task (exactly one unless foreach)."""
        self.first = 0
        """Task number of the first of them."""
        self.deps: list[int] = []
        """Resolved parent task numbers (the same for every expansion)."""
        self.broken = False
        """Its foreach could not be expanded (already reported): dependents skip their checks."""
        self.dynamic: ExpandFrom | None = None
        """Its ``foreach_from``, resolved (after the dependencies)."""


class CompilerState:
    """One compilation: the spec, the issues found so far, and the name tables."""

    def __init__(
        self,
        spec: WorkflowSpec,
        positions: Sequence[int] | None = None,
        unparsed: frozenset[str] = frozenset(),
        *,
        max_expansion_width: int = MAX_EXPANSIONS,
    ) -> None:
        self.spec = spec
        self.max_expansion_width = max_expansion_width
        """Most tasks one foreach_from may expand to at run time (``Settings``)."""
        self.positions = positions
        """Where each task was written, when tasks with shape problems were left out."""
        self.unparsed = unparsed
        """Names of the tasks left out (their problems are reported already)."""
        self.issues = Issues()
        self.suggester = Suggester()
        self.match_budget = MatchBudget(MAX_GLOB_MATCHES)
        self._names: list[str] | None = None
        self.written: list[Written] = []
        self.number_of: dict[str, int] = {}
        """Final task name -> task number (the first, if duplicated)."""
        self.owner: list[Written] = []
        """Task number -> the written task it came from."""
        self.expanded_left = MAX_EXPANDED_BYTES
        """Bytes of cmd + env the expansions may still add (see ``charge``)."""
        self.workflow_env_bytes = environment_bytes(spec.env)


def environment_bytes(env: Mapping[str, str]) -> int:
    """Size of an environment as NAME=value entries (the unit of ``MAX_ENV_BYTES``)."""
    return sum(len(k) + len(v) + 2 for k, v in env.items())
