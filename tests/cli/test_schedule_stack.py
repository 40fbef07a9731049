"""``dagq schedule``: create, list, show, pause, resume, delete against the app under the local
host (no workers: nothing needs to run), and the exit codes of bad input (2) and of a schedule
that does not exist (3)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devtools.azurite import Azurite
from devtools.testing.api_host import start_host
from shared.cli.exitcodes import ExitCode
from tests.support.stack import Result, Stack

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

Dagq = Callable[..., Result]
NIGHTLY = "name: nightly\ntasks:\n  - name: train\n    kwargs: {cmd: echo train}\n"


@pytest.fixture(scope="module")
def stack(azurite: Azurite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The app alone under the local host, on a prefix of its own (its timers off)."""
    logs = Path(tmp_path_factory.mktemp("stack"))
    env = {"DAGQ_STORAGE": azurite.connection_string, "DAGQ_PREFIX": "s" + uuid.uuid4().hex[:12]}
    host = start_host(env, logs / "host.log", extra_args=("--no-queues", "--no-timers"))
    try:
        yield Stack(host=host, workers=[], env=env, logs=logs)
    finally:
        host.stop()


@pytest.fixture
def nightly(tmp_path: Path) -> str:
    path = tmp_path / "nightly.yaml"
    path.write_text(NIGHTLY)
    return str(path)


def test_a_schedule_from_create_to_delete(dagq: Dagq, nightly: str) -> None:
    created = dagq(
        "schedule", "create", "nightly", nightly, "--cron", "0 2 * * *",
        "--timezone", "Europe/Berlin", "--concurrency", "forbid", "--catch-up", "3",
    )  # fmt: skip
    assert created.code == ExitCode.OK, created.err
    assert "schedule nightly" in created.out
    assert "0 2 * * *  (Europe/Berlin)" in created.out
    assert "forbid" in created.out
    assert "runs:        none yet" in created.out

    listed = dagq("schedule", "list")
    assert listed.code == ExitCode.OK
    header, row = listed.out.splitlines()[:2]
    assert header.split()[:3] == ["NAME", "CRON", "TIMEZONE"]
    assert row.startswith("nightly")
    assert "Europe/Berlin" in row

    shown = json.loads(dagq("schedule", "show", "nightly", "--json").out)
    assert (shown["catch_up"], shown["concurrency"], shown["paused"]) == (3, "forbid", False)
    assert len(shown["next_runs"]) == 3

    paused = dagq("schedule", "pause", "nightly")
    assert paused.code == ExitCode.OK
    assert "(paused)" in paused.out
    assert "paused" in dagq("schedule", "list").out
    resumed = dagq("schedule", "resume", "nightly", "--json")
    assert json.loads(resumed.out)["paused"] is False

    deleted = dagq("schedule", "delete", "nightly")
    assert deleted.code == ExitCode.OK
    assert "deleted schedule nightly" in deleted.out
    missing = dagq("schedule", "show", "nightly")
    assert missing.code == ExitCode.NOT_FOUND
    assert "does not exist" in missing.err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--cron", "61 2 * * *"), "invalid cron"),
        (("--cron", "0 0 2 * * *"), "has 6 fields"),
        (("--cron", "0 2 * * *", "--timezone", "Europe/Atlantis"), "unknown time zone"),
        (("--cron", "0 2 * * *", "--param", "novalue"), "expected NAME=VALUE"),
        (("--cron", "0 2 * * *", "--concurrency", "sometimes"), "invalid choice"),
        (("--cron", "0 2 * * *", "--catch-up", "500"), "--catch-up takes 1 to 100"),
    ],
)
def test_bad_input_exits_2_with_what_is_wrong(
    dagq: Dagq, nightly: str, args: tuple[str, ...], says: str
) -> None:
    result = dagq("schedule", "create", "bad", nightly, *args)
    assert result.code == ExitCode.USAGE, result.out + result.err
    assert says in result.err
    assert "Traceback" not in result.err
    assert dagq("schedule", "show", "bad").code == ExitCode.NOT_FOUND  # nothing was written


def test_a_bad_name_or_definition_exits_2(dagq: Dagq, nightly: str, tmp_path: Path) -> None:
    result = dagq("schedule", "create", "no/slash", nightly, "--cron", "0 2 * * *")
    assert result.code == ExitCode.USAGE
    assert "invalid schedule name" in result.err
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "name: b\ntasks:\n  - name: a\n    depends_on: [ghost]\n    kwargs: {cmd: x}\n"
    )
    result = dagq("schedule", "create", "broken", str(broken), "--cron", "0 2 * * *")
    assert result.code == ExitCode.USAGE
    assert "ghost" in result.err
    result = dagq("schedule", "create", "gone", str(tmp_path / "nope.yaml"), "--cron", "0 2 * * *")
    assert result.code == ExitCode.USAGE
    assert "cannot read" in result.err


def test_the_schedule_line_of_examples_nightly_yaml_works(
    dagq: Dagq, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shlex

    root = Path(__file__).resolve().parents[2]
    header = (root / "examples" / "nightly.yaml").read_text().splitlines()
    [line] = [ln for ln in header if ln.lstrip("# ").startswith("dagq schedule create")]
    args = shlex.split(line.lstrip("# "))
    monkeypatch.chdir(root)
    result = dagq(*args[1:], "--json")
    assert result.code == ExitCode.OK, result.err
    assert json.loads(result.out)["timezone"] == "Europe/Berlin"
    assert dagq("schedule", "delete", "nightly").code == ExitCode.OK
