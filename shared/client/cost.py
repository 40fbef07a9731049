"""The client's cost methods, mixed into ``shared.client.Client``.

with Client() as dagq:
    dagq.workflow_cost("20261201-101500-ab12cd").gpu_hours
    dagq.cost(since_s=7 * 86400, by="queue").groups
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel

from shared.client.transport import segment
from shared.views import CostReport, WorkflowCost

_M = TypeVar("_M", bound=BaseModel)


class CostMixin:
    """Methods of ``Client`` about cost."""

    if TYPE_CHECKING:

        def _model(self, model: type[_M], method: str, path: str, **kwargs: Any) -> _M: ...

    def workflow_cost(self, workflow_id: str) -> WorkflowCost:
        """One workflow's GPU-hours, CPU-hours, estimated cost, storage requests and what the
        result cache saved, per task."""
        return self._model(WorkflowCost, "GET", f"/workflows/{segment(workflow_id)}/cost")

    def cost(
        self, *, since_s: float, by: Literal["queue", "name"] = "queue", limit: int | None = None
    ) -> CostReport:
        """The cost of the workflows created in the last ``since_s`` seconds, grouped by queue or
        by workflow name."""
        params: dict[str, str | int] = {"since_s": repr(float(since_s)), "by": by}
        if limit is not None:
            params["limit"] = limit
        return self._model(CostReport, "GET", "/cost", params=params)
