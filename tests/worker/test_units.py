"""The worker's pure parts: settings from the environment, GPU slots, Scheduled Events parsing,
cwd containment, output and log files. No storage."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shared.errors import ConfigError
from shared.messages import TaskMessage
from worker_agent.config import WorkerSettings
from worker_agent.errors import AttemptError
from worker_agent.files import AttemptPaths, open_directory, read_output, resolve_cwd
from worker_agent.gpu import slot_devices
from worker_agent.logfile import LogFile
from worker_agent.preemption import parse_notices
from worker_agent.task_env import task_environment


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGQ_WORKER_QUEUES", "gpu, cpu")
    monkeypatch.setenv("DAGQ_WORKER_GPUS", "0,1,2,3")
    monkeypatch.setenv("DAGQ_WORKER_CONCURRENCY", "2")
    monkeypatch.setenv("DAGQ_WORKER_VISIBILITY_S", "90")
    monkeypatch.setenv("DAGQ_WORKER_LOG_LEVEL", "debug")
    settings = WorkerSettings()
    assert settings.queues == ["gpu", "cpu"]
    assert settings.gpus == ["0", "1", "2", "3"]
    assert settings.concurrency == 2
    assert settings.heartbeat_interval_s == 30
    assert settings.log_level == "DEBUG"
    # The command line (init arguments) wins over the environment.
    assert WorkerSettings(queues=["a100"]).queues == ["a100"]


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="invalid queue name"):
        WorkerSettings(queues=["gpu/../x"])
    with pytest.raises(ConfigError, match="must be below visibility_s"):
        WorkerSettings(queues=["gpu"], visibility_s=10, heartbeat_s=12)


def test_gpu_slots_are_disjoint_groups() -> None:
    assert slot_devices([], 1, None) == (1, [None])
    assert slot_devices([], 1, 3) == (3, [None, None, None])
    assert slot_devices(["0", "1", "2", "3"], 1, None) == (4, ["0", "1", "2", "3"])
    assert slot_devices(["0", "1", "2", "3", "4"], 2, None) == (2, ["0,1", "2,3"])
    assert slot_devices(["0", "1", "2", "3"], 2, 1) == (1, ["0,1"])
    with pytest.raises(ConfigError, match="needs 6 GPUs"):
        slot_devices(["0", "1", "2", "3"], 2, 3)
    with pytest.raises(ConfigError, match="more than the 1 GPU"):
        slot_devices(["0"], 2, None)
    with pytest.raises(ConfigError, match="twice"):
        slot_devices(["0", "0"], 1, None)


def test_scheduled_events_for_this_vm_only() -> None:
    document = {
        "DocumentIncarnation": 3,
        "Events": [
            {"EventId": "a", "EventType": "Freeze", "Resources": ["vm1"]},
            {"EventId": "b", "EventType": "Preempt", "Resources": ["vm2"]},
            {
                "EventId": "c",
                "EventType": "Terminate",
                "Resources": ["vm1"],
                "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT",
            },
        ],
    }
    (notice,) = parse_notices(document, "vm1")
    assert notice.event_id == "c"
    assert notice.event_type == "Terminate"
    assert notice.not_before == 1474309787.0
    assert [n.event_id for n in parse_notices(document, None)] == ["b", "c"]
    assert parse_notices({"Events": "nonsense"}, "vm1") == []
    assert parse_notices([1, 2], "vm1") == []


def test_relative_cwd_stays_inside_the_work_dir(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    default = work / "default"
    assert resolve_cwd(work, default, None) == default
    assert resolve_cwd(work, default, "repo/src") == (work / "repo/src").resolve()
    assert (work / "repo/src").is_dir()
    assert resolve_cwd(work, default, str(tmp_path)) == tmp_path
    for bad in ("..", "../x", "a/../../x"):
        with pytest.raises(AttemptError, match="leaves the worker's work directory"):
            resolve_cwd(work, default, bad)
    (work / "escape").symlink_to(tmp_path)
    with pytest.raises(AttemptError, match="leaves"):
        resolve_cwd(work, default, "escape")
    with pytest.raises(AttemptError, match="does not exist"):
        resolve_cwd(work, default, str(tmp_path / "missing"))


def test_read_output(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    assert read_output(path, 100) is None
    path.write_text("  \n")
    assert read_output(path, 100) is None
    path.write_text('{"a": [1, 2.5, null]}')
    assert read_output(path, 100) == ({"a": [1, 2.5, None]}, b'{"a": [1, 2.5, null]}')
    for bad in ("[NaN]", "[1e999]", '{"a": -1e400}'):  # before: 1e999 was read as infinity
        path.write_text(bad)
        with pytest.raises(AttemptError, match="not valid JSON"):
            read_output(path, 100)
    path.write_text(json.dumps("x" * 200))
    with pytest.raises(AttemptError, match="over the worker's limit of 100 bytes"):
        read_output(path, 100)


def test_long_log_keeps_head_and_tail(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(b"H" * 3000 + b"M" * 5000 + b"T" * 3000)
    with LogFile.create(path) as log:
        data = log.read(4000)
        assert log.tail(3) == "TTT"
    assert data.startswith(b"H" * 2000)
    assert data.endswith(b"T" * 2000)
    assert b"7000 bytes of log omitted" in data
    with LogFile.create(tmp_path / "new") as log:
        assert log.read(4000) == b""


def test_a_log_path_that_is_a_link_or_fifo_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to("/dev/zero")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (link, fifo):
        with pytest.raises(OSError):
            LogFile.create(path)


def test_task_environment_drops_storage_secrets(tmp_path: Path) -> None:
    message = TaskMessage(
        workflow_id="wf", task="t", attempt=3, queue="gpu", cmd="true",
        env={"DAGQ_TASK": "spoofed", "X": "1", "CUDA_VISIBLE_DEVICES": "0,1,2,3"},
    )  # fmt: skip
    paths = AttemptPaths.create(tmp_path, message)
    base = {
        "PATH": "/bin",
        "DAGQ_STORAGE": "AccountKey=k",
        "DAGQ_STORAGE__accountName": "acct",
        "AzureWebJobsStorage": "k",
        "APPLICATIONINSIGHTS_CONNECTION_STRING": "k",
    }
    env = task_environment(base, message, paths, "2")
    assert env["PATH"] == "/bin"
    assert env["X"] == "1"
    assert not {"DAGQ_STORAGE", "DAGQ_STORAGE__accountName", "AzureWebJobsStorage"} & set(env)
    assert "APPLICATIONINSIGHTS_CONNECTION_STRING" not in env
    assert env["DAGQ_TASK"] == "t"
    assert env["DAGQ_ATTEMPT"] == "3"
    assert env["DAGQ_OUTPUT"] == str(paths.output)
    assert env["CUDA_VISIBLE_DEVICES"] == "2"


def test_output_must_be_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    (tmp_path / "secret").write_text('"s"')
    path.symlink_to(tmp_path / "secret")
    with pytest.raises(AttemptError, match="must be a regular file"):
        read_output(path, 100)
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(AttemptError, match="must be a regular file"):
        read_output(path, 100)
    path.unlink()
    os.link(tmp_path / "secret", path)  # a second name of a file the task may not read
    with pytest.raises(AttemptError, match="must be a regular file"):
        read_output(path, 100)


def test_a_relative_cwd_is_made_without_following_a_link_swapped_in(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    work = tmp_path / "work"
    (work / "mine").mkdir(parents=True)
    assert resolve_cwd(work, work, "mine/deeper") == (work / "mine" / "deeper").resolve()
    # A task swaps a component for a link once the check has resolved it: the agent (root)
    # neither creates nor opens anything through the link.
    (work / "mine").rename(work / "old")
    (work / "mine").symlink_to(elsewhere)
    with pytest.raises(OSError):
        open_directory(work / "mine" / "deeper", beneath=work, create=True)
    assert not (elsewhere / "deeper").exists()
    descriptor = open_directory(work / "old" / "deeper", beneath=work)
    try:
        assert os.path.samefile(f"/proc/self/fd/{descriptor}", work / "old" / "deeper")
    finally:
        os.close(descriptor)
