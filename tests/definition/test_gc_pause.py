"""The compiler's garbage-collector pause is local: restored on errors, re-entrant, safe across
threads, and it never turns on a collector someone else turned off."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from shared.definition.compiler import compile_text
from shared.definition.gc_pause import paused_gc
from shared.errors import DefinitionError


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_a_failing_compile_turns_the_collector_back_on() -> None:
    with pytest.raises(DefinitionError):
        compile_text(
            '{"name": "w", "tasks": [{"name": "a", "kwargs": {"cmd": "x"}, "depends_on": ["b"]}]}'
        )
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        _fail_while_paused()
    assert gc.isenabled()


def _fail_while_paused() -> None:
    with paused_gc():
        assert not gc.isenabled()
        raise RuntimeError("boom")


def test_nested_pauses_end_with_the_outer_one() -> None:
    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner end does not undo the outer pause
    assert gc.isenabled()


def test_a_collector_turned_off_elsewhere_stays_off() -> None:
    gc.disable()
    with paused_gc():
        pass
    assert not gc.isenabled()


def test_overlapping_pauses_in_two_threads() -> None:
    # A enters, B enters, A leaves (B still compiling: still paused), B leaves (back on).
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def a() -> None:
        with paused_gc():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with paused_gc():
            b_in.set()
            a_out.wait(5)
            seen["after a left"] = gc.isenabled()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"after a left": False}
    assert gc.isenabled()
