"""Submit cannot be a CPU sink: the work one validation does is bounded, counted in operations
(never timed). Each test reproduces a body that was superlinear to reject."""

from __future__ import annotations

import difflib
import fnmatch
import random
from typing import Any

import pytest

import shared.definition.passes.dependencies as dependencies_pass
from shared.definition.suggestions import Suggester
from shared.limits import (
    MAX_DEPENDENCIES,
    MAX_EXPANDED_BYTES,
    MAX_GLOB_MATCHES,
    MAX_SUGGESTION_WORK,
)
from tests.definition.helpers import issues_of, task, workflow


class CountingMatcher(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """A SequenceMatcher that counts the candidates it is given and the ratios it computes."""

    candidates = 0
    ratios = 0

    def set_seq1(self, a: Any) -> None:
        CountingMatcher.candidates += 1
        super().set_seq1(a)

    def ratio(self) -> float:
        CountingMatcher.ratios += 1
        return super().ratio()


@pytest.fixture
def matcher(monkeypatch: pytest.MonkeyPatch) -> type[CountingMatcher]:
    CountingMatcher.candidates = CountingMatcher.ratios = 0
    monkeypatch.setattr(difflib, "SequenceMatcher", CountingMatcher)
    return CountingMatcher


def test_thousands_of_unknown_dependencies_cost_a_bounded_number_of_comparisons(
    matcher: type[CountingMatcher],
) -> None:
    # The report: a 120 KB body with thousands of unknown names took 32.8 s to reject, because a
    # "did you mean" search over every task name ran for each unknown name before the cap.
    tasks = [task(f"task{i}") for i in range(2000)]
    tasks.append(task("x", depends_on=[f"tsk{i}" for i in range(6000)]))
    tasks.extend(task(f"y{i}", depends_on=[f"tsk{i}"]) for i in range(2000))
    issues = issues_of(workflow(*tasks))
    assert len(issues) == 3 + 1 + 2000  # x: three shown, then "... and 5997 more"
    assert (issues[-1].location, issues[-1].message) == (
        "tasks.x.depends_on",
        "... and 5997 more like the above",
    )
    # Each candidate costs at least two characters of the budget; before: 8,000 x 4,000.
    assert matcher.candidates <= MAX_SUGGESTION_WORK // 2
    assert "did you mean 'task0'?" in issues[0].message  # the first ones still get a hint


def test_the_same_unknown_name_is_looked_up_once(matcher: type[CountingMatcher]) -> None:
    tasks = [task(f"task{i}") for i in range(100)]
    tasks.extend(task(f"y{i}", depends_on=["tsk1"]) for i in range(50))
    issues = issues_of(workflow(*tasks))
    assert all("did you mean 'task1'?" in i.message for i in issues)
    assert matcher.candidates == 1 + 150  # (the constructor's empty one) + one search


def test_long_similar_names_stop_at_the_work_budget(matcher: type[CountingMatcher]) -> None:
    # A ratio costs up to the product of the lengths: with 2,000 names of 128 characters that
    # the quick checks cannot tell apart (anagrams of the unknown one), one hint took seconds.
    word = "ab" * 64
    rng = random.Random(0)
    names = ["".join(rng.sample(word, len(word))) for _ in range(2000)]
    suggester = Suggester()
    suggester.hint(word, names)
    assert 0 < matcher.ratios <= MAX_SUGGESTION_WORK // (128 * 128)
    assert suggester.left == 0
    ratios = matcher.ratios
    assert suggester.hint("a" * 127, ["a" * 126]) == ""  # spent: no more hints, no more work
    assert matcher.ratios == ratios


def test_unknown_keys_share_one_hint(matcher: type[CountingMatcher]) -> None:
    definition = workflow(*[{**task(f"t{i}"), "dependson": ["a"]} for i in range(3000)])
    issues = issues_of(definition)
    assert len(issues) == 3000
    assert all("did you mean 'depends_on'?" in i.message for i in issues)
    assert matcher.candidates < 50  # one search over TaskSpec's keys


def test_fan_in_stops_at_the_dependency_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # 300 tasks each depending on nine 10,000-task groups used to build 90,000 dependencies each
    # (27 million steps) before the limit was checked.
    resolved: list[int] = []
    resolve = dependencies_pass.resolve

    def counting(c: Any, w: Any, groups: Any) -> Any:
        deps, error = resolve(c, w, groups)
        resolved.append(len(deps))
        return deps, error

    monkeypatch.setattr(dependencies_pass, "resolve", counting)
    groups = [task(f"g{i}", "echo {{ n }}", foreach={"n": list(range(5000))}) for i in range(3)]
    sinks = [task(f"t{i}", depends_on=["g0", "g1", "g2"]) for i in range(40)]
    issues = issues_of(workflow(*groups, *sinks))
    assert issues[0].location == "tasks.t0.depends_on"
    assert f"more than {MAX_DEPENDENCIES:,} dependencies after foreach fan-in" in issues[0].message
    assert max(resolved) <= MAX_DEPENDENCIES


def test_dependency_edges_stop_resolution_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dependencies_pass, "MAX_EDGES", 50_000)
    calls: list[str] = []
    resolve = dependencies_pass.resolve

    def counting(c: Any, w: Any, groups: Any) -> Any:
        calls.append(w.spec.name)
        return resolve(c, w, groups)

    monkeypatch.setattr(dependencies_pass, "resolve", counting)
    group = task("g", "echo {{ n }}", foreach={"n": list(range(10_000))})
    issues = issues_of(workflow(group, *[task(f"t{i}", depends_on=["g"]) for i in range(500)]))
    assert [i.message for i in issues] == [
        "the workflow has more than 50,000 dependency edges after expansion (the limit)"
    ]
    assert len(calls) == 6  # not 500


def test_many_conditions_share_one_glob_matching_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # 150 conditions of 19 globs over 10,000 dependencies each: 28 million name tests before.
    translated: list[str] = []
    translate = fnmatch.translate
    monkeypatch.setattr(fnmatch, "translate", lambda p: translated.append(p) or translate(p))
    condition = " or ".join(f'any(state("g.n={i}*") == "failed")' for i in range(1, 20))
    group = task("g", "echo {{ n }}", foreach={"n": list(range(10_000))})
    sinks = [task(f"t{i}", depends_on=["g"], condition=condition) for i in range(150)]
    issues = issues_of(workflow(group, *sinks))
    assert "match their globs against too many dependencies in all" in issues[0].message
    assert len(translated) <= MAX_GLOB_MATCHES // 10_000


def test_expansion_output_is_bounded_by_bytes() -> None:
    # A 370 KB body: five 10,000-way foreach tasks with 16 KB commands would be 800 MB of commands.
    cmd = "echo {{ n }} " + "x" * 16_000
    groups = [task(f"g{i}", cmd, foreach={"n": list(range(10_000))}) for i in range(5)]
    issues = issues_of(workflow(*groups))
    assert [i.location for i in issues] == ["tasks"]
    assert f"more than {MAX_EXPANDED_BYTES:,} bytes after foreach expansion" in issues[0].message
