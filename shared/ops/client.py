"""The client's operations methods (workers, doctor, purge), mixed into ``shared.client.Client``.

with Client() as dagq:
    for worker in dagq.workers().workers: ...
    report = dagq.doctor()                 # or dagq.doctor("20261201-101500-ab12cd")
    dagq.delete("20261201-101500-ab12cd")  # purge one finished workflow
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from shared.ops.views import WorkersView

if TYPE_CHECKING:
    from collections.abc import Mapping

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
