"""The worker survives its own tasks (issue 11 §3): real task subprocesses that swap their log or
output for a FIFO or a link to /dev/zero, escape their process group with setsid, or go looking
for the worker's credentials in their environment."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.messages import TaskCompletedEvent, TaskFailedEvent
from shared.names import ResourceNames
from shared.storage.azure import AzureStorage
from tests.support.processes import alive
from tests.worker.agents import (
    create_workflow,
    read_events,
    running_agent,
    send_task,
    set_status,
    start_agent,
)
from tests.worker.waiting import wait_for
from worker_agent import cgroup
from worker_agent.config import WorkerSettings
from worker_agent.runner import Command, StopRequest, run_command

pytestmark = [pytest.mark.azurite, pytest.mark.subprocess]

Make = Callable[..., WorkerSettings]

# The task's log is ../log.txt and its output $DAGQ_OUTPUT, beside its default cwd.
LOG_AS_FIFO = "echo before; rm ../log.txt; mkfifo ../log.txt; echo after"
LOG_AS_DEV_ZERO = "echo before; rm ../log.txt; ln -s /dev/zero ../log.txt"
OUTPUT_AS_FIFO = 'mkfifo "$DAGQ_OUTPUT"'
OUTPUT_AS_DEV_ZERO = 'ln -s /dev/zero "$DAGQ_OUTPUT"'
OUTPUT_AS_HARDLINKED_DEVICE = 'mknod "$DAGQ_OUTPUT" c 1 5 2>/dev/null || mkfifo "$DAGQ_OUTPUT"'


@pytest.mark.parametrize("cmd", [LOG_AS_FIFO, LOG_AS_DEV_ZERO], ids=["fifo", "dev-zero"])
async def test_a_task_that_replaces_its_log_neither_hangs_nor_floods_the_worker(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, cmd: str
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", cmd)
    # Before the fix the FIFO hung the slot forever and /dev/zero was read until memory ran out;
    # read_events' own deadline turns either into a failure here.
    async with running_agent(worker_settings(max_log_bytes=4096), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskCompletedEvent), event
    assert event.log_blob is not None
    log = await azure_storage.outputs.get(event.log_blob)
    assert log.startswith(b"before\n")  # the log the worker opened, not what the path holds now
    assert len(log) <= 4096


@pytest.mark.parametrize(
    "cmd",
    [OUTPUT_AS_FIFO, OUTPUT_AS_DEV_ZERO, OUTPUT_AS_HARDLINKED_DEVICE],
    ids=["fifo", "dev-zero-link", "device"],
)
async def test_an_output_that_is_not_a_regular_file_fails_the_attempt(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, cmd: str
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", cmd)
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent), event
    assert event.reason == "error"
    assert "must be a regular file" in event.error


async def test_an_output_over_the_limit_is_not_read_past_it(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", 'head -c 5000 /dev/zero > "$DAGQ_OUTPUT"')
    async with running_agent(worker_settings(max_output_bytes=1000), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent)
    assert "over the worker's limit of 1000 bytes" in event.error


async def test_an_output_with_a_lone_surrogate_fails_the_attempt_with_the_reason(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make
) -> None:
    # Python's json reads "\\ud800" into a str no UTF-8 encoder takes: the attempt was released
    # and rerun (UnicodeEncodeError while measuring the output) instead of failing.
    await create_workflow(azure_storage, "wf1")
    cmd = 'printf \'%s\' \'{"name": "\\ud800"}\' > "$DAGQ_OUTPUT"'
    await send_task(azure_storage, names, "wf1", "t", cmd)
    async with running_agent(worker_settings(), azure_storage):
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent), event
    assert event.reason == "error"
    assert "$DAGQ_OUTPUT" in event.error
    assert "$.name" in event.error
    assert "lone surrogate" in event.error


# -- setsid ---------------------------------------------------------------------------------------

CGROUP = cgroup.probe()
needs_cgroup = pytest.mark.skipif(
    isinstance(CGROUP, str), reason=f"no cgroup delegation on this machine: {CGROUP}"
)
ESCAPEE = "setsid sh -c 'trap \"\" TERM; echo $$ > {pid}; exec sleep 60' & sleep 60"
"""A task whose child leaves the process group (setsid), ignores SIGTERM and records its pid."""


def _pid_in(path: Path) -> int | None:
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text else None


async def wait_for_pid(path: Path) -> int:
    await wait_for(lambda: _pid_in(path) is not None)
    pid = _pid_in(path)
    assert pid is not None
    return pid


@pytest.fixture
def own_parent() -> Iterator[Path]:
    """A parent cgroup of this test's own: task groups of other runs on the machine (another
    checkout's suite, a local stack) are never mistaken for this test's leftovers."""
    assert not isinstance(CGROUP, str)
    parent = CGROUP / f"dagq-test-{uuid.uuid4().hex[:12]}"
    parent.mkdir()
    yield parent
    for child in parent.iterdir():
        if child.is_dir():
            with contextlib.suppress(OSError):
                child.rmdir()
    with contextlib.suppress(OSError):
        parent.rmdir()


@needs_cgroup
@pytest.mark.parametrize("how", ["cancelled", "timeout"])
async def test_a_setsid_child_is_gone_after_cancel_and_timeout(
    tmp_path: Path, how: str, own_parent: Path
) -> None:
    pid_file = tmp_path / "pid"
    stop = StopRequest()
    command = Command(
        cmd=ESCAPEE.format(pid=pid_file), cwd=tmp_path, env=dict(os.environ),
        log_path=tmp_path / "log.txt", timeout_s=1.0 if how == "timeout" else None,
        cgroup_parent=own_parent,
    )  # fmt: skip
    run = asyncio.create_task(run_command(command, stop, kill_grace_s=0.3))
    escapee = await wait_for_pid(pid_file)
    assert os.getpgid(escapee) != os.getpgid(os.getpid())
    if how == "cancelled":
        stop.request("cancelled")
    result = await asyncio.wait_for(run, timeout=20)
    assert result.stopped == how
    assert not alive(escapee)
    assert not _populated_task_groups(own_parent)


def _populated_task_groups(parent: Path) -> list[Path]:
    return [
        group
        for group in parent.iterdir()
        if group.name.startswith("dagq-task-")
        and "populated 1" in (group / "cgroup.events").read_text()
    ]


@needs_cgroup
async def test_a_setsid_child_left_behind_by_a_finished_task_is_stopped(tmp_path: Path) -> None:
    assert not isinstance(CGROUP, str)
    pid_file = tmp_path / "pid"
    command = Command(
        cmd=f"setsid sleep 60 & echo $! > {pid_file}", cwd=tmp_path, env=dict(os.environ),
        log_path=tmp_path / "log.txt", cgroup_parent=CGROUP,
    )  # fmt: skip
    result = await asyncio.wait_for(run_command(command, StopRequest(), kill_grace_s=0.3), 20)
    assert result.returncode == 0
    assert not alive(int(pid_file.read_text()))


@needs_cgroup
async def test_the_agent_kills_a_setsid_child_of_a_cancelled_task(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", ESCAPEE.format(pid=pid_file))
    async with running_agent(worker_settings(kill_grace_s=0.3), azure_storage):
        escapee = await wait_for_pid(pid_file)
        await set_status(azure_storage, "wf1", "cancelling")
        (event,) = await read_events(azure_storage, 1)
    assert isinstance(event, TaskFailedEvent)
    assert event.reason == "cancelled"
    assert not alive(escapee)


# -- credentials ----------------------------------------------------------------------------------

CREDENTIALS = {
    "AZURE_CLIENT_ID": "worker-client-id",
    "AZURE_TENANT_ID": "tenant",
    "AZURE_CLIENT_SECRET": "secret",
    "AZURE_FEDERATED_TOKEN_FILE": "/var/run/secrets/azure/tokens/azure-identity-token",
    "AZURE_AUTHORITY_HOST": "https://login.microsoftonline.com/",
    "IDENTITY_ENDPOINT": "http://127.0.0.1:1/msi/token",
    "IDENTITY_HEADER": "header",
    "MSI_ENDPOINT": "http://127.0.0.1:1/msi",
    "MSI_SECRET": "msi-secret",
    "APPLICATIONINSIGHTS_AUTHENTICATION_STRING": "ClientId=x;Authorization=AAD",
    "AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountKey=k",
}
DUMP_ENV = "python3 -c \"import json, os; json.dump(sorted(os.environ), open(os.environ['DAGQ_OUTPUT'], 'w'))\""  # noqa: E501


async def test_the_task_environment_carries_none_of_the_worker_credentials(
    azure_storage: AzureStorage,
    names: ResourceNames,
    storage_env: dict[str, str],
    tmp_path: Path,
) -> None:
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", DUMP_ENV, env={"MINE": "1"})
    agent = await start_agent(
        storage_env, tmp_path / "w", "cpu", log=tmp_path / "agent.log",
        DAGQ_WORKER_TASK_ENV="HF_* KEEP_ME", HF_HOME="/data/hf", KEEP_ME="1", DROP_ME="1",
        **CREDENTIALS,
    )  # fmt: skip
    try:
        (event,) = await read_events(azure_storage, 1)
    finally:
        agent.terminate()
        await agent.wait()
    assert isinstance(event, TaskCompletedEvent), (tmp_path / "agent.log").read_text()
    assert event.output is not None
    seen = set(event.output.inline if event.output.blob is None else json.loads(
        await azure_storage.outputs.get(event.output.blob)))  # fmt: skip
    assert not seen & set(CREDENTIALS)
    assert not {name for name in seen if name.startswith(("DAGQ_STORAGE", "DAGQ_WORKER_"))}
    assert {"PATH", "HF_HOME", "KEEP_ME", "MINE", "DAGQ_OUTPUT", "DAGQ_TASK"} <= seen
    assert "DROP_ME" not in seen


def test_an_extra_allowlist_that_names_a_credential_is_refused() -> None:
    from pydantic import ValidationError

    for pattern in ("AZURE_*", "*", "MSI_SECRET", "DAGQ_STORAGE*", "AZURE_FEDERATED_TOKEN_FILE"):
        with pytest.raises(ValidationError, match="may not inherit the worker's credentials"):
            WorkerSettings(queues=["cpu"], task_env=[pattern])
    assert WorkerSettings(queues=["cpu"], task_env="HF_HOME,WANDB_*").task_env == [
        "HF_HOME",
        "WANDB_*",
    ]


# -- a user of its own ----------------------------------------------------------------------------


def _nobody() -> tuple[str, int] | None:
    import pwd

    try:
        return "nobody", pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return None


NOBODY = _nobody()


def _secret_and_work_dir(tmp_path: Path) -> tuple[Path, Path]:
    secret = tmp_path / "worker.env"  # like /etc/dagq/worker.env: the agent's user only
    secret.write_text("AZURE_CLIENT_ID=worker\n")
    secret.chmod(0o600)
    work = Path(tempfile.mkdtemp(prefix="dagq-task-user-"))  # traversable, like /var/lib/dagq/work
    work.chmod(0o755)
    return secret, work


@pytest.mark.skipif(os.geteuid() != 0, reason="starting a task as another user needs root")
@pytest.mark.skipif(NOBODY is None, reason="no 'nobody' user on this machine")
async def test_a_task_user_reads_neither_the_agent_environment_nor_its_settings_file(
    azure_storage: AzureStorage, names: ResourceNames, worker_settings: Make, tmp_path: Path
) -> None:
    assert NOBODY is not None
    user, uid = NOBODY
    secret, work = _secret_and_work_dir(tmp_path)
    cmd = (
        f"cat {secret} && echo READ-SETTINGS; cat /proc/$PPID/environ >/dev/null 2>&1 && echo "
        'READ-AGENT-ENV; printf \'{"uid": %s, "home": "%s"}\' "$(id -u)" "$HOME" > "$DAGQ_OUTPUT"'
    )
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", cmd)
    try:
        async with running_agent(worker_settings(task_user=user, work_dir=work), azure_storage):
            (event,) = await read_events(azure_storage, 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert isinstance(event, TaskCompletedEvent), event
    assert event.output is not None
    assert event.output.inline == {"uid": uid, "home": pwd_home(user)}
    assert event.log_blob is not None
    log = await azure_storage.outputs.get(event.log_blob)
    assert b"READ-SETTINGS" not in log
    assert b"READ-AGENT-ENV" not in log


class SameUserTask:
    """Another task of the task user on the same worker: as soon as the agent gives it an attempt
    directory (a chown that leaves the directory the task user's), it swaps every entry it may
    now rename for a link to a root-owned file, as a racing task could between two steps."""

    def __init__(self, uid: int, secret: Path) -> None:
        self.uid, self.secret, self.swapped = uid, secret, 0

    def after_chown(self, target: str) -> None:
        path = Path(target)
        if not path.is_dir() or path.stat().st_uid != self.uid:
            return
        if path.parent.parent.parent.name != "attempts":  # attempts/{workflow}/{task}/{attempt}
            return
        for name, link in (
            ("work", os.symlink),
            ("progress.jsonl", os.symlink),
            ("output.json", os.symlink),
            ("log.txt", os.link),  # a hard link, where fs.protected_hardlinks is off
        ):
            entry = path / name
            if entry.exists() or entry.is_symlink():
                entry.rename(path / f"{name}.old")
            link(self.secret, entry)
            self.swapped += 1


@pytest.mark.skipif(os.geteuid() != 0, reason="starting a task as another user needs root")
@pytest.mark.skipif(NOBODY is None, reason="no 'nobody' user on this machine")
async def test_a_task_of_the_same_user_cannot_get_root_files_handed_to_it(
    azure_storage: AzureStorage,
    names: ResourceNames,
    worker_settings: Make,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert NOBODY is not None
    user, uid = NOBODY
    secret, work = _secret_and_work_dir(tmp_path)
    before = secret.stat()
    other = SameUserTask(uid, secret)
    chown, fchown = os.chown, os.fchown

    def chown_then_race(path: Any, *args: Any, **kwargs: Any) -> None:
        chown(path, *args, **kwargs)
        other.after_chown(os.fspath(path))

    def fchown_then_race(fd: int, *args: Any, **kwargs: Any) -> None:
        fchown(fd, *args, **kwargs)
        other.after_chown(os.readlink(f"/proc/self/fd/{fd}"))

    monkeypatch.setattr(os, "chown", chown_then_race)
    monkeypatch.setattr(os, "fchown", fchown_then_race)
    await create_workflow(azure_storage, "wf1")
    await send_task(azure_storage, names, "wf1", "t", 'echo pwned >> "$DAGQ_PROGRESS"; pwd')
    try:
        async with running_agent(worker_settings(task_user=user, work_dir=work), azure_storage):
            (event,) = await read_events(azure_storage, 1)
    finally:
        after = secret.stat()
        shutil.rmtree(work, ignore_errors=True)
        assert other.swapped  # the race was run
        assert (after.st_uid, after.st_gid, after.st_mode) == (0, 0, before.st_mode)
        assert secret.read_text() == "AZURE_CLIENT_ID=worker\n"
    # The output link is refused; the task ran in the directory the agent made (renamed since),
    # not where the link leads.
    assert isinstance(event, TaskFailedEvent), event
    assert "must be a regular file" in event.error
    assert event.log_blob is not None
    assert b"/attempts/wf1/t/1/work.old\n" in await azure_storage.outputs.get(event.log_blob)


def pwd_home(user: str) -> str:
    import pwd

    return pwd.getpwnam(user).pw_dir


def test_an_unknown_task_user_is_a_configuration_error(worker_settings: Make) -> None:
    from shared.errors import ConfigError
    from worker_agent.task_user import TaskUser

    with pytest.raises(ConfigError, match="does not exist on this machine"):
        TaskUser.lookup("no-such-dagq-user")


# -- tasks of the agent's own user ----------------------------------------------------------------

DUMPABLE = """
import ctypes, subprocess, sys
{shield}
libc = ctypes.CDLL(None)
child = "import ctypes; print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"
print(libc.prctl(3, 0, 0, 0, 0), subprocess.run([sys.executable, "-c", child],
      capture_output=True, text=True).stdout.strip())
"""


def test_the_agent_hides_its_environment_from_tasks_of_its_own_user() -> None:
    # Where tasks run as the agent's user (no task user: the CLI default, make up), the agent is
    # not dumpable: /proc/<agent>/environ and its memory are then root's, not the user's. Its
    # children re-become dumpable at exec, so tasks keep working as before.
    import subprocess
    import sys

    shielded = DUMPABLE.format(shield="from worker_agent.task_user import shield_agent\n"
                               "assert shield_agent()")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", shielded], capture_output=True, text=True)
    assert result.stdout.split() == ["0", "1"], result.stderr


async def test_the_worker_says_at_start_how_its_tasks_are_isolated(
    storage_env: dict[str, str], tmp_path: Path
) -> None:
    log = tmp_path / "agent.log"
    agent = await start_agent(storage_env, tmp_path / "w", "cpu", log=log)
    try:
        await wait_for(lambda: "tasks run as" in log.read_text(), timeout_s=20)
    finally:
        agent.terminate()
        await agent.wait()
    expected = "tasks run as root" if os.geteuid() == 0 else "tasks run as the agent's user"
    assert expected in log.read_text()
