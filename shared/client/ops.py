"""The client's operations methods (workers, doctor, purge), mixed into ``shared.client.Client``.

with Client() as dagq:
    for worker in dagq.workers().workers: ...
    report = dagq.doctor()                 # or dagq.doctor("20261201-101500-ab12cd")
    dagq.delete("20261201-101500-ab12cd")  # purge one finished workflow
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from shared.client.transport import segment as _seg
from shared.views import DoctorReport, PurgedView, PurgeReport, WorkersView

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Mapping

_M = TypeVar("_M", bound=BaseModel)


class OperationsMixin:
    """Methods of ``Client`` for operating a deployment."""

    if TYPE_CHECKING:

        def _model(self, model: type[_M], method: str, path: str, **kwargs: Any) -> _M: ...

        def _json(
            self, method: str, path: str, *, params: Mapping[str, str | int] | None = None
        ) -> Any: ...

    def workers(self) -> WorkersView:
        """The worker registry: every worker agent with its queues, busy slots, current tasks and
        whether it is alive or lost."""
        return self._model(WorkersView, "GET", "/workers")

    def doctor(self, workflow_id: str | None = None) -> DoctorReport:
        """Check the deployment (and one workflow): findings with their fixes, computed by the
        API. ``report.healthy`` is False when an error or warning was found."""
        params = {"id": workflow_id} if workflow_id else None
        return self._model(DoctorReport, "GET", "/doctor", params=params)

    def delete(self, workflow_id: str) -> PurgedView:
        """Purge one finished workflow: its definition, state, index row, outputs and logs
        (ApiError 409 while it runs, 404 if unknown). Finishes an interrupted purge too."""
        return self._model(PurgedView, "DELETE", f"/workflows/{_seg(workflow_id)}")

    def purge(
        self,
        older_than_s: float,
        *,
        statuses: Collection[str] = (),
        dry_run: bool = False,
        limit: int = 100,
        next_token: str | None = None,
    ) -> PurgeReport:
        """One step of a bulk purge of workflows finished more than ``older_than_s`` ago; pass
        ``report.next`` back as ``next_token`` until it is None (``iter_purge`` does)."""
        params: dict[str, str | int] = {"older_than_s": repr(float(older_than_s)), "limit": limit}
        if statuses:
            params["status"] = ",".join(statuses)
        if dry_run:
            params["dry_run"] = "true"
        if next_token:
            params["next"] = next_token
        return self._model(PurgeReport, "POST", "/purge", params=params)

    def iter_purge(
        self, older_than_s: float, *, statuses: Collection[str] = (), dry_run: bool = False
    ) -> Iterator[PurgeReport]:
        """Every step of a bulk purge, to the end of the scan."""
        token: str | None = None
        while True:
            report = self.purge(older_than_s, statuses=statuses, dry_run=dry_run, next_token=token)
            yield report
            if report.next is None:
                return
            token = report.next
