"""``make rbac-check``'s scenarios: the real app (local host) and real worker agents on Azurite,
each running as its identity under infra/'s role assignments (``DAGQ_RBAC_ENFORCE``), driven
through the CLI over every path that touches storage: submit, dispatch, the worker's claim, log,
output, progress and registry writes, completion, a cache hit and record, cancel, retry, purge,
doctor, cost, dead letters (a malformed task message and a malformed event), schedules and the
dashboard's reads. Then, from the calls every process recorded:

- nothing was refused (infra/ lacks no role the code needs);
- every role assignment for dagq's code was used (least privilege);
- docs/permissions.md shows infra/'s role assignments as they are (``make rbac-check`` also
  fails on a call it does not list).

``tests/infra/test_permission_model.py`` shows the same check failing, naming the resource, for
role assignments removed from identity.bicep.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devtools.azurite import Azurite
from devtools.permissions import DOC, findings
from shared.cli.exitcodes import ExitCode
from shared.settings import Settings
from shared.storage.factory import open_storage
from shared.storage.rbac.usage import read_uses
from tests.notify.receiver import receiver
from tests.support.stack import Result, Stack, running_stack

Dagq = Callable[..., Result]

PIPELINE = """
name: rbac
default_queue: cpu
tasks:
  - name: prep
    kwargs:
      cmd: |
        echo "preparing"
        echo '{"progress": 0.5, "step": 1}' >> "$DAGQ_PROGRESS"
        sleep 2
        echo '{"data": "DATA"}' > "$DAGQ_OUTPUT"
  - name: train
    depends_on: [prep]
    queue: gpu
    cache: true
    kwargs:
      cmd: >-
        python3 -c 'import json, os; json.dump({"pad": "x" * 6000},
        open(os.environ["DAGQ_OUTPUT"], "w"))'
"""

SLOW = """
name: slow
default_queue: cpu
tasks:
  - name: wait
    kwargs:
      cmd: sleep 60
"""

FAILING = """
name: failing
default_queue: cpu
tasks:
  - name: broken
    kwargs:
      cmd: echo "no good" >&2; exit 3
"""


@pytest.fixture(scope="module")
def usage_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the stack's processes record their calls (make rbac-check names one to keep)."""
    kept = os.environ.get("DAGQ_RBAC_SCENARIO_USAGE")
    return Path(kept) if kept else Path(tmp_path_factory.mktemp("rbac")) / "usage.jsonl"


@pytest.fixture(scope="module")
def stack(
    azurite: Azurite, tmp_path_factory: pytest.TempPathFactory, usage_file: Path
) -> Iterator[Stack]:
    """The cli stack, its processes recording their calls to this module's own file."""
    logs = Path(tmp_path_factory.mktemp("stack"))
    usage = {"DAGQ_RBAC_ENFORCE": "1", "DAGQ_RBAC_USAGE": str(usage_file)}
    local_hooks = {"DAGQ_NOTIFY_ALLOW_PRIVATE": "1", "DAGQ_NOTIFY_ALLOW_HTTP": "1"}
    with running_stack(azurite, logs, **usage, **local_hooks) as started:
        yield started


def ok(result: Result, stack: Stack) -> str:
    assert result.code == ExitCode.OK, result.out + result.err + stack.diagnostics()
    return result.out


def submit(dagq: Dagq, stack: Stack, text: str, *extra: str) -> str:
    out = ok(dagq("submit", "-", "--json", *extra, stdin=text), stack)
    return str(json.loads(out)["id"])


def wait_for(dagq: Dagq, workflow_id: str, status: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        shown = dagq("status", workflow_id, "--json")
        if shown.code == ExitCode.OK and json.loads(shown.out)["status"] == status:
            return
        time.sleep(0.3)
    raise AssertionError(f"{workflow_id} never became {status}")


async def dead_letter_two(stack: Stack) -> None:
    """A task message and an event that cannot be read, sent by the test's own hand (no
    identity): wait until the worker and the coordinator have each dead-lettered one."""
    settings = Settings.model_validate(stack.env)
    async with open_storage(settings) as storage:
        await storage.queues.get(settings.names.task_queue("cpu")).send("{not json")
        await storage.event_queue.send("{not an event either")
        deadline = time.monotonic() + 60
        while len(await storage.deadletters.list()) < 2:
            assert time.monotonic() < deadline, "the malformed messages were not dead-lettered"
            await asyncio.sleep(0.3)


async def crashed_submit(stack: Stack, workflow_id: str, text: str) -> None:
    """A submit that stopped after its definition blob, written as a dagq from before definitions
    said whose they are: by the test's own hand (no identity)."""
    from shared.api.service import compile_definition

    settings = Settings.model_validate(stack.env)
    async with open_storage(settings) as storage:
        await storage.workflows.create_definition(workflow_id, compile_definition(text)[1])


BURST = "name: burst\ndefault_queue: cpu\ntasks:\n  - {name: one, kwargs: {cmd: 'true'}}\n"


def burst(stack: Stack, usage_file: Path) -> None:
    """Submits arriving together, as the app's concurrent invocations do: their index rows are
    inserted together, in one batch transaction (``index.create_many``, issue 32). A burst whose
    submits happened not to overlap is sent again (a few at most)."""
    from concurrent.futures import ThreadPoolExecutor

    def post(_: int) -> int:
        request = urllib.request.Request(
            stack.url + "/workflows", data=BURST.encode(), method="POST",
            headers={"Content-Type": "application/yaml"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=60) as answer:
            return int(answer.status)

    for _ in range(5):
        with ThreadPoolExecutor(12) as pool:
            assert set(pool.map(post, range(12))) == {201}
        if any(use.call == "index.create_many" for use in read_uses(usage_file)):
            return
    raise AssertionError("no burst of concurrent submits had its rows batched")


def get(stack: Stack, path: str) -> bytes:
    try:
        with urllib.request.urlopen(stack.url + path, timeout=30) as answer:
            body: bytes = answer.read()
            return body
    except urllib.error.HTTPError as error:
        raise AssertionError(f"GET {path}: {error}") from None


def test_every_path_stays_within_the_deployments_roles(
    dagq: Dagq, stack: Stack, usage_file: Path
) -> None:
    # Submit, dispatch, claims, logs, outputs, progress, completion; a cache record, then a hit.
    first = submit(dagq, stack, PIPELINE, "--wait", "--timeout", "120")
    second = submit(dagq, stack, PIPELINE, "--wait", "--timeout", "120")
    shown = json.loads(ok(dagq("status", second, "--json"), stack))
    assert shown["tasks"]["train"].get("cached_from"), shown["tasks"]["train"]
    burst(stack, usage_file)  # concurrent submits: their rows in one batch transaction

    # Cancel a running task; retry a failed workflow.
    slow = submit(dagq, stack, SLOW)
    wait_for(dagq, slow, "running")
    time.sleep(2)
    ok(dagq("cancel", slow), stack)
    wait_for(dagq, slow, "cancelled")
    # With a webhook (issue 29): each failed run is told, by the app's notify function.
    with receiver() as hook:
        failing = submit(dagq, stack, FAILING, "--notify", hook.url())
        wait_for(dagq, failing, "failed")
        ok(dagq("retry", failing), stack)
        wait_for(dagq, failing, "failed")
        deadline = time.monotonic() + 60
        while len(hook.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        told = sorted(json.loads(r.body)["workflow"]["run"] for r in hook.requests)
        assert told == [1, 2], told

    # Dead letters, then everything a user and the dashboard read.
    asyncio.run(dead_letter_two(stack))
    for args in (
        ("list",),
        ("status", first),
        ("outputs", first, "prep"),
        ("logs", first, "prep"),
        ("attempts", first, "prep"),
        ("workers",),
        ("cost", first),
        ("health",),
    ):
        ok(dagq(*args), stack)
    dagq("doctor")  # findings (the dead letters) make it exit non-zero: its reads are what count
    dashboard = (
        "/ui",
        "/workflows",
        f"/workflows/{first}",
        f"/workflows/{first}/graph",
        f"/workflows/{first}/tasks/prep",
        f"/workflows/{first}/tasks/prep/log",
        "/cost",
        "/workers",
    )
    for path in dashboard:
        get(stack, path)
    ok(dagq("purge", first), stack)
    # A submit completing one that stopped after its definition makes that definition its own.
    asyncio.run(crashed_submit(stack, "rbac-crashed", PIPELINE))
    submit(dagq, stack, PIPELINE, "--id", "rbac-crashed")

    # Schedules, in the app's own table: create, list, show, pause, resume, delete (the sweep
    # lists them every few seconds).
    definition = stack.logs / "scheduled.yaml"
    definition.write_text(FAILING)
    ok(dagq("schedule", "create", "rbac", str(definition), "--cron", "0 2 * * *"), stack)
    for verb in ("list", "show", "pause", "resume"):
        ok(dagq("schedule", verb, *(() if verb == "list" else ("rbac",))), stack)
    get(stack, "/schedules")
    ok(dagq("schedule", "delete", "rbac"), stack)

    uses = read_uses(usage_file)
    problems = findings(uses, DOC.read_text(), listed=False)
    assert not problems, "\n".join(problems)
