"""A submitted workflow as a Python object: thin wrappers over ``Client`` methods.

run = dagq.Run.submit(client, wf)     # or dagq.Run(client, "wf-...") for one that exists
final = run.wait()
print(run.tasks["train"].state, run.output("evaluate"))
for line in run.logs("train", follow=True): print(line, end="")
print(run.cost().estimated_cost)
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from shared.client import CancelAccepted, Client, TaskInfo, UpdateCallback
from shared.client import Workflow as WorkflowState
from shared.client.operations import Definition
from shared.views import WorkflowCost


@dataclass(frozen=True)
class Run:
    """A workflow on the API (by id), through ``client``."""

    client: Client
    id: str

    @classmethod
    def submit(
        cls,
        client: Client,
        definition: Definition,
        *,
        workflow_id: str | None = None,
        no_cache: bool = False,
        refresh: Sequence[str] = (),
        notify: Sequence[str] | None = None,
        params: Mapping[str, str | int | float | bool] | None = None,
    ) -> Run:
        """Submit ``definition`` (a ``dagq.Workflow``, text, mapping or path) with its parameter
        values (``params``): ``Client.submit``."""
        submitted = client.submit(
            definition,
            workflow_id=workflow_id,
            no_cache=no_cache,
            refresh=refresh,
            params=params,
            notify=notify,
        )
        return cls(client, submitted.id)

    def state(self) -> WorkflowState:
        """The workflow now, with its tasks (``Client.get``)."""
        return self.client.get(self.id)

    @property
    def tasks(self) -> Mapping[str, TaskInfo]:
        """Task name -> its state now (one ``GET`` per access)."""
        return self.state().tasks

    def wait(
        self, *, on_update: UpdateCallback | None = None, timeout_s: float | None = None
    ) -> WorkflowState:
        """Until the workflow ends (``Client.wait``, with its tasks)."""
        return self.client.wait(self.id, on_update=on_update, timeout_s=timeout_s, tasks=True)

    def output(self, task: str) -> JsonValue:
        """The task's output value (``Client.output``; ApiError 404 when it wrote none)."""
        return self.client.output(self.id, task)

    def outputs(self) -> dict[str, JsonValue]:
        """Every completed task's output (``Client.outputs``)."""
        return self.client.outputs(self.id)

    def logs(self, task: str, *, follow: bool = False, attempt: int | None = None) -> Iterator[str]:
        """The task's log as text pieces; with ``follow``, until the attempt ends."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        for piece in self.client.log_pieces(self.id, task, attempt=attempt, follow=follow):
            if text := decoder.decode(piece.data):
                yield text
        if tail := decoder.decode(b"", final=True):
            yield tail

    def cost(self) -> WorkflowCost:
        """GPU-/CPU-hours and the estimated cost, per task (``Client.workflow_cost``)."""
        return self.client.workflow_cost(self.id)

    def cancel(self, reason: str | None = None) -> CancelAccepted:
        """``Client.cancel``."""
        return self.client.cancel(self.id, reason=reason)
