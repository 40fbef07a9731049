"""examples/nightly.yaml with ``--param`` on the real stack (issue 29): the values reach the
scripts, show in ``dagq status`` and ``dagq cost``, an idempotent submit compares them, and every
bad value exits 2 with the problem located."""

from __future__ import annotations

import json
from collections.abc import Callable

from shared.cli.exitcodes import ExitCode
from tests.support.stack import EXAMPLES, Result, Stack

Dagq = Callable[..., Result]
NIGHTLY = str(EXAMPLES / "nightly.yaml")


def test_nightly_runs_with_the_values_given_and_shows_them(dagq: Dagq, stack: Stack) -> None:
    args = ("--param", "lr=4.0", "--param", "epochs=10", "--param", "tag=it's nightly")
    done = dagq("submit", NIGHTLY, "--id", "nightly-p1", *args, "--wait", "--timeout", "120")
    assert done.code == ExitCode.OK, done.err + stack.diagnostics()
    body = json.loads(dagq("status", "nightly-p1", "--json").out)
    assert body["params"] == {
        "lr": 4.0, "epochs": 10, "rows": 240, "seed": 7, "min_accuracy": 0.8,
        "tag": "it's nightly",
    }  # fmt: skip
    trained = json.loads(dagq("outputs", "nightly-p1", "train").out)
    assert (trained["lr"], trained["epochs"]) == (4.0, 10)
    assert "run it's nightly" in dagq("logs", "nightly-p1", "prep").out  # $DAGQ_PARAM_tag
    assert "params  lr=4.0  epochs=10" in dagq("status", "nightly-p1").out
    assert "lr=4.0" in dagq("cost", "nightly-p1").out

    again = dagq("submit", NIGHTLY, "--id", "nightly-p1", *args)
    assert again.code == ExitCode.OK
    assert "already exists" in again.err
    other = dagq("submit", NIGHTLY, "--id", "nightly-p1", "--param", "lr=0.5")
    assert other.code == ExitCode.API_ERROR  # the same id with other values: a conflict


def test_bad_values_exit_2_with_every_problem(dagq: Dagq) -> None:
    bad = dagq("submit", NIGHTLY, "--param", "lrr=1", "--param", "epochs=many")
    assert bad.code == ExitCode.USAGE
    assert "did you mean 'lr'?" in bad.err
    assert "epochs is a number parameter: 'many' is not a number" in bad.err
    malformed = dagq("submit", NIGHTLY, "--param", "lr")
    assert malformed.code == ExitCode.USAGE
