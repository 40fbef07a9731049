"""The cache key changes whenever any input in it changes, and only then (hypothesis): equal
inputs (in any order of env and upstream) give equal keys; two different inputs give different
keys. Plus what a key never depends on: blob names of outputs, the per-run parts."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from shared.caching.key import CacheInputs, cache_key, key_of_task, output_digest
from shared.definition.workflow import CachePolicy, TaskDef
from shared.messages import OutputRef
from shared.names import ResourceNames

_text = st.text(max_size=12)
_digest = st.one_of(
    st.builds(lambda v: output_digest(OutputRef(inline=v)), st.integers() | _text),
    st.text("0123456789abcdef", min_size=64, max_size=64).map(lambda h: "b:" + h),
)
inputs = st.builds(
    CacheInputs,
    cmd=_text,
    env=st.dictionaries(_text, _text, max_size=3),
    cwd=st.none() | _text,
    queue=st.sampled_from(["cpu", "gpu"]),
    gpus=st.integers(0, 8),
    version=_text,
    upstream=st.dictionaries(st.sampled_from(["a", "b", "c"]), _digest, max_size=3),
)


def canonical(i: CacheInputs) -> tuple[object, ...]:
    return (
        i.cmd, sorted(i.env.items()), i.cwd, i.queue, i.gpus, i.version, sorted(i.upstream.items())
    )  # fmt: skip


@given(inputs, inputs)
def test_the_key_changes_iff_an_input_changes(a: CacheInputs, b: CacheInputs) -> None:
    assert (cache_key(a) == cache_key(b)) == (canonical(a) == canonical(b))


@given(inputs, st.data())
def test_changing_any_one_input_changes_the_key(a: CacheInputs, data: st.DataObject) -> None:
    field = data.draw(
        st.sampled_from(["cmd", "env", "cwd", "queue", "gpus", "version", "upstream"])
    )
    changed = replace(a, **{field: data.draw(inputs).__dict__[field]})
    assert (cache_key(changed) == cache_key(a)) == (canonical(changed) == canonical(a))


@given(inputs)
def test_order_of_env_and_upstream_does_not_matter(a: CacheInputs) -> None:
    flipped = replace(
        a,
        env=dict(reversed(list(a.env.items()))),
        upstream=dict(reversed(list(a.upstream.items()))),
    )
    assert cache_key(flipped) == cache_key(a)


def test_blob_names_never_enter_the_key_but_content_hashes_do() -> None:
    task = TaskDef(name="t", cmd="train", queue="gpu", parents=(0,), cache=CachePolicy())
    h1, h2 = "1" * 64, "2" * 64
    one = key_of_task(
        task, {"p": OutputRef(blob=ResourceNames.output_blob("run1", "p", 1), size=9, sha256=h1)}
    )
    two = key_of_task(
        task, {"p": OutputRef(blob=ResourceNames.output_blob("run2", "p", 4), size=9, sha256=h1)}
    )
    other = key_of_task(
        task, {"p": OutputRef(blob=ResourceNames.output_blob("run2", "p", 4), size=9, sha256=h2)}
    )
    assert one == two != other
    # An older worker's blob output carries no hash: the task cannot be keyed, it runs.
    assert (
        key_of_task(task, {"p": OutputRef(blob=ResourceNames.output_blob("run1", "p", 1), size=9)})
        is None
    )
    assert key_of_task(replace(task, cache=None), {}) is None


def test_inline_values_are_keyed_by_canonical_json() -> None:
    assert output_digest(OutputRef(inline={"a": 1, "b": 2})) == output_digest(
        OutputRef(inline={"b": 2, "a": 1})
    )
    assert output_digest(OutputRef(inline=1)) != output_digest(OutputRef(inline="1"))
