"""The object one compilation works on: the spec, the options, the issues found so far, and the
tables of tasks that the passes (``shared.definition.passes``) fill in and read.

``shared.definition.compiler`` makes one ``Compilation`` per definition and hands it to each pass
in turn. A pass reads the fields that earlier passes filled in (each field says which pass does)
and reports problems into ``issues``; ``stop()`` ends the compilation early when going on would
only cost work (a budget is spent) without finding anything the reader can use.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from shared.definition.conditions import MatchBudget
from shared.definition.foreach import Params
from shared.definition.spec import Scalar, TaskSpec, WorkflowSpec
from shared.definition.suggestions import Suggester
from shared.definition.workflow import ExpandFrom
from shared.errors import DefinitionError, Issue
from shared.limits import MAX_EXPANDED_BYTES, MAX_EXPANSIONS, MAX_GLOB_MATCHES

MAX_REPEATS_PER_LOCATION = 3
"""Issues shown per location before the rest are summarised (one bad value x 10,000 expansions)."""


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
    """One task as written, with what the passes derived from it."""

    __slots__ = ("broken", "deps", "dynamic", "expansions", "first", "index", "loc", "spec")

    def __init__(self, index: int, spec: TaskSpec, loc: str) -> None:
        self.index = index
        self.spec = spec
        self.loc = loc
        """``tasks.<name>`` (or ``tasks[i]`` when the name itself is invalid)."""
        self.expansions: list[Expansion] = []
        """One per final task (exactly one unless foreach): the expansion pass."""
        self.first = 0
        """Task number of the first of them."""
        self.deps: list[int] = []
        """Resolved parent task numbers (the same for every expansion): the dependencies pass."""
        self.broken = False
        """Its foreach could not be expanded (already reported): dependents skip their checks."""
        self.dynamic: ExpandFrom | None = None
        """Its ``foreach_from``, resolved: the foreach_from pass."""


@dataclass(frozen=True, slots=True)
class Options:
    """What the caller decides about a compilation (the rest is fixed by ``shared.limits``)."""

    source: str = "<input>"
    """Where the text came from, named in the ``DefinitionError``."""
    source_text: str | None = None
    """The definition as submitted, kept in the ``CompiledWorkflow`` (None: not kept)."""
    max_expansion_width: int = MAX_EXPANSIONS
    """Most tasks one foreach_from may expand to at run time (``Settings``)."""
    params: Mapping[str, str] | None = None
    """Parameter values given at submit, as text (``--param NAME=VALUE``)."""
    require_params: bool = True
    """False: a required parameter without a value is no problem (``dagq validate`` without
    ``--param``); a stand-in of its type fills it."""


@dataclass(slots=True, eq=False)
class Compilation:
    """One compilation: its input, the issues found so far, and the tables the passes fill in."""

    spec: WorkflowSpec
    options: Options = Options()
    positions: Sequence[int] | None = None
    """Where each task was written, when tasks with shape problems were left out."""
    unparsed: frozenset[str] = frozenset()
    """Names of the tasks left out (their problems are reported already)."""
    issues: Issues = field(default_factory=Issues)
    suggester: Suggester = field(default_factory=Suggester)
    """The "did you mean" hints of this compilation, within one budget of work."""
    match_budget: MatchBudget = field(default_factory=lambda: MatchBudget(MAX_GLOB_MATCHES))
    """Glob name tests that all the conditions may still take."""
    written: list[Written] = field(default_factory=list)
    """One per task as written (the expansion pass)."""
    number_of: dict[str, int] = field(default_factory=dict)
    """Final task name -> task number (the first, if duplicated) (the expansion pass)."""
    owner: list[Written] = field(default_factory=list)
    """Task number -> the written task it came from (the expansion pass)."""
    expanded_left: int = MAX_EXPANDED_BYTES
    """Bytes of cmd + env the expansions may still add (``shared.definition.passes.budgets``)."""
    workflow_env_bytes: int = 0
    """Size of the workflow's env, counted again for every task."""
    known_names: list[str] | None = None
    """Every name a dependency may use, built the first time one is unknown (for hints)."""
    param_values: dict[str, Scalar] = field(default_factory=dict)
    """Parameter name -> its value for this run (the params pass)."""
    param_vars: dict[str, Scalar] = field(default_factory=dict)
    """The same as template variables, ``params.NAME`` -> value (the params pass)."""
    env: dict[str, str] = field(default_factory=dict)
    """The workflow's env with its parameters filled in (the params pass)."""

    def __post_init__(self) -> None:
        self.env = self.spec.env
        self.workflow_env_bytes = environment_bytes(self.spec.env)

    def stop(self) -> DefinitionError:
        """The error that ends the compilation with the issues found so far."""
        return DefinitionError(self.issues.finish(), self.options.source)


def environment_bytes(env: Mapping[str, str]) -> int:
    """Size of an environment as NAME=value entries (the unit of ``MAX_ENV_BYTES``)."""
    return sum(len(k) + len(v) + 2 for k, v in env.items())
