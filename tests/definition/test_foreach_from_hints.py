"""foreach_from errors say what to write instead (issue 20): a "did you mean" for the reference,
the keys that exist for a missing key."""

from __future__ import annotations

from shared.definition.workflow import ExpandFrom
from shared.engine.capture import items_of
from tests.definition.helpers import issues_of, task, workflow


def test_a_foreach_from_reference_gets_a_did_you_mean() -> None:
    found = issues_of(
        workflow(
            task("prep"),
            task("fan", "echo {{ item }}", depends_on=["prep"], foreach_from="inputs.prepp.files"),
        )
    )
    assert any("did you mean 'prep'?" in issue.message for issue in found), found


def test_a_missing_key_of_a_foreach_from_source_lists_the_keys_there() -> None:
    spec = ExpandFrom(0, ("shards",), 100)
    why = items_of({"shard": [1], "files": []}, spec, "prep")
    assert why == (
        "inputs.prep.shards: inputs.prep is a mapping without 'shards'; its keys: 'shard', 'files'"
    )
    many = items_of({f"k{i}": 1 for i in range(15)}, spec, "prep")
    assert isinstance(many, str)
    assert many.endswith("'k9' and 5 more")
    assert isinstance(items_of({"shards": {"a": [1]}}, ExpandFrom(0, ("shards", "b"), 9), "p"), str)


def test_an_index_in_other_digits_is_a_missing_key_not_a_crash() -> None:
    # "²".isdigit() is true and int("²") raises: the expansion crashed instead of failing the task.
    for key in ("²", "①", "١"):
        why = items_of([[1], [2]], ExpandFrom(0, (key,), 9), "prep")
        assert isinstance(why, str)
        assert repr(key) in why
