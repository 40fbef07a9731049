"""The pieces of live logs and progress, without a running agent: bounds and hostile input."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from shared.limits import MAX_METRICS, MAX_PROGRESS_CHARS
from shared.limits import MAX_PROGRESS_LINE_BYTES as MAX_LINE_BYTES
from shared.progress import TaskProgress
from shared.storage.memory import memory_storage
from shared.storage.registry import (
    WorkerTask,
    progress_text,
    with_progress,
)
from worker_agent.gpu_use import GpuSampler, parse_gpu_lines
from worker_agent.live import AttemptKey, LiveAttempt
from worker_agent.log_shipper import LogShipper
from worker_agent.logfile import LogFile
from worker_agent.progress_file import READ_BYTES, ProgressFile

LOG = logging.LoggerAdapter(logging.getLogger("test"), {})


async def test_a_long_log_is_shipped_live_up_to_half_the_limit_then_head_marker_tail(
    tmp_path: Path,
) -> None:
    storage = memory_storage()
    path = tmp_path / "log.txt"
    with LogFile.create(path) as log:
        shipper = LogShipper(storage.outputs, "wf/t/1/log.txt", log, max_bytes=4000, logger=LOG)
        await shipper.tick()  # creates the blob, empty
        assert await storage.outputs.get("wf/t/1/log.txt") == b""
        with path.open("ab") as task:
            task.write(b"H" * 1500)
        await shipper.tick()
        await shipper.tick()  # nothing new: no write
        assert shipper.writes == 2
        with path.open("ab") as task:
            task.write(b"H" * 500 + b"M" * 5000 + b"T" * 2000)
        await shipper.tick()
        assert await storage.outputs.get("wf/t/1/log.txt") == b"H" * 2000  # the first half
        assert await shipper.finish() == "wf/t/1/log.txt"
    data = await storage.outputs.get("wf/t/1/log.txt")
    assert data.startswith(b"H" * 2000)
    assert data.endswith(b"T" * 2000)
    assert b"[... dagq: 5000 bytes of log omitted ...]" in data
    assert b"M" not in data


async def test_a_short_log_ends_complete(tmp_path: Path) -> None:
    storage = memory_storage()
    path = tmp_path / "log.txt"
    with LogFile.create(path) as log:
        shipper = LogShipper(storage.outputs, "wf/t/2/log.txt", log, max_bytes=4000, logger=LOG)
        path.write_bytes(b"all of it\n")
        assert await shipper.finish() == "wf/t/2/log.txt"  # never ticked: put at the end
        assert shipper.writes == 1
    assert await storage.outputs.get("wf/t/2/log.txt") == b"all of it\n"


async def test_a_log_taken_over_by_another_worker_stops_shipping(tmp_path: Path) -> None:
    storage = memory_storage()
    path = tmp_path / "log.txt"
    with LogFile.create(path) as log:
        shipper = LogShipper(storage.outputs, "wf/t/3/log.txt", log, max_bytes=4000, logger=LOG)
        await shipper.tick()
        await storage.outputs.append(
            "wf/t/3/log.txt", b"other", at=0, content_type="text/plain", create=True
        )
        path.write_bytes(b"mine")
        await shipper.tick()
        assert shipper.stopped
        assert await shipper.finish() is None
    assert await storage.outputs.get("wf/t/3/log.txt") == b"other"


def test_progress_lines_are_bounded_and_only_plain_metric_names_count(tmp_path: Path) -> None:
    progress = ProgressFile(tmp_path / "p.jsonl")
    lines = [
        {"progress": 0.25, "epoch": 1, "loss": 0.5},
        {"progress": 7, "loss": "high", "ok": True, "<script>": 1, "a/b": 2, "x" * 40: 3},
        {"nan": float("nan")},
        [1, 2],
    ]
    with (tmp_path / "p.jsonl").open("a") as task:
        for line in lines:
            task.write(json.dumps(line) + "\n")
        task.write("not json\n")
        task.write('{"epoch": 2, "cut": ')  # not finished yet
    assert progress.read()
    assert progress.progress == TaskProgress(0.25, {"epoch": 1.0, "loss": 0.5})
    with (tmp_path / "p.jsonl").open("a") as task:
        task.write("3}\n")
        task.write(json.dumps({f"m{i}": i for i in range(20)}) + "\n")
    assert progress.read()
    assert progress.progress.metrics["epoch"] == 2
    assert progress.progress.metrics["cut"] == 3
    assert len(progress.progress.metrics) == MAX_METRICS
    assert not progress.read()  # nothing new
    progress.close()


def test_an_over_long_line_and_a_flood_are_skipped(tmp_path: Path) -> None:
    progress = ProgressFile(tmp_path / "p.jsonl")
    with (tmp_path / "p.jsonl").open("a") as task:
        task.write('{"epoch": 1, "pad": "' + "x" * MAX_LINE_BYTES + '"}\n')
    assert not progress.read()
    with (tmp_path / "p.jsonl").open("a") as task:
        task.write(json.dumps({"epoch": 1}) + "\n" * (READ_BYTES * 3))
        task.write(json.dumps({"epoch": 9}) + "\n")
    assert progress.read()
    assert progress.progress.metrics == {"epoch": 9}
    progress.close()


def test_progress_in_a_worker_record_stays_under_its_bound() -> None:
    metrics = {f"metric_{i:02d}_{'x' * 20}": 1e300 / 3 for i in range(MAX_METRICS)}
    tasks = [WorkerTask("wf", f"t{i}", 1, TaskProgress(0.5, metrics)) for i in range(100)]
    text = progress_text(tasks)
    assert len(text) <= MAX_PROGRESS_CHARS
    back = with_progress([WorkerTask("wf", f"t{i}", 1) for i in range(100)], text)
    assert back[0].progress == TaskProgress(0.5, metrics)
    assert back[-1].progress is None  # past the budget: listed without progress
    assert with_progress(tasks[:1], '[[0, {"p": 5, "m": {"<i>": 1}}], "junk"]')[0].progress == (
        TaskProgress()
    )


def test_nvidia_smi_lines() -> None:
    text = "0, 87, 30000, 81920\n1, [N/A], 1, 2\n2,3,512,81920\nbad\n3, 500, 1, 2\n"
    assert [g.index for g in parse_gpu_lines(text)] == [0, 2]


async def test_a_gpu_sample_reads_nvidia_smi_to_its_end(tmp_path: Path) -> None:
    # Before: one read() returned what the first write had produced, so a GPU listed after a
    # pause in nvidia-smi's output was missing (test_live failed so under load).
    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "0, 87, 30000, 81920"\nsleep 0.3\necho "2, 3, 512, 81920"\n')
    smi.chmod(0o755)
    assert [g.index for g in await GpuSampler(str(smi)).sample()] == [0, 2]


def test_a_huge_integer_is_not_a_number(tmp_path: Path) -> None:
    progress = TaskProgress()
    assert not progress.fold_line(b'{"progress": 1%s, "loss": -1%s}' % (b"0" * 400, b"0" * 400))
    assert progress.fold_line(b'{"progress": 1, "loss": 2}')
    assert (progress.progress, progress.metrics) == (1.0, {"loss": 2.0})


async def test_whatever_breaks_a_progress_read_is_logged_counted_and_the_loop_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = memory_storage()
    errors: list[AttemptKey] = []
    key = AttemptKey("wf", "t", 1)
    with LogFile.create(tmp_path / "log.txt") as log:
        live = LiveAttempt(
            key, LogFile.create(tmp_path / "p.jsonl"), log, storage.outputs,
            max_log_bytes=4000, interval_s=0.01, logger=LOG, lost=lambda: False,
            on_progress=None, on_error=errors.append,
        )  # fmt: skip

        def broken() -> bool:
            raise ValueError("a bug the task found")

        live.progress.read = broken  # type: ignore[method-assign]
        live.start()
        await asyncio.sleep(0.1)
        assert live._task is not None
        assert not live._task.done()  # still looking
        (tmp_path / "log.txt").write_bytes(b"still shipped\n")
        await live.stop()
        assert await live.finish() == "wf/t/1/log.txt"
    assert await storage.outputs.get("wf/t/1/log.txt") == b"still shipped\n"
    assert len(errors) >= 2
    assert set(errors) == {key}
    assert "cannot read the progress of wf/t/1" in caplog.text
