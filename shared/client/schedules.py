"""The client's schedule methods (issue 29), mixed into ``shared.client.Client``.

with Client() as dagq:
    dagq.create_schedule("nightly", "examples/nightly.yaml", cron="0 2 * * *",
                         timezone="Europe/Berlin", params={"lr": 0.01})
    dagq.schedules().schedules        # every schedule, with its next slots and latest run
    dagq.schedule("nightly").runs     # its latest runs with their status
    dagq.pause_schedule("nightly"); dagq.resume_schedule("nightly")
    dagq.delete_schedule("nightly")
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel

from shared.client.transport import segment
from shared.errors import DagqError
from shared.views import ScheduleDeleted, ScheduleList, ScheduleView

_M = TypeVar("_M", bound=BaseModel)

ParamValue = str | int | float | bool


def param_text(value: ParamValue) -> str:
    """A parameter value as sent (strings on the wire; a bool as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def definition_body(definition: Any) -> tuple[bytes, str]:
    """The body and content type of a definition given as text, bytes, a mapping, a file path or
    a workflow built in Python (anything with ``to_dict()``)."""
    if isinstance(definition, Path):
        try:
            data = definition.read_bytes()
        except OSError as exc:
            raise DagqError(f"cannot read {definition}: {exc.strerror or exc}") from None
        is_json = definition.suffix.lower() == ".json"
        return data, "application/json" if is_json else "application/yaml"
    if hasattr(definition, "to_dict"):
        definition = definition.to_dict()
    if isinstance(definition, Mapping):
        return json.dumps(definition).encode(), "application/json"
    data = definition.encode("utf-8") if isinstance(definition, str) else bytes(definition)
    return data, "application/json" if data.lstrip()[:1] == b"{" else "application/yaml"


class SchedulesMixin:
    """Methods of ``Client`` about schedules."""

    if TYPE_CHECKING:

        def _model(self, model: type[_M], method: str, path: str, **kwargs: Any) -> _M: ...

    def create_schedule(
        self,
        name: str,
        definition: Any,
        *,
        cron: str,
        timezone: str = "UTC",
        params: Mapping[str, ParamValue] | None = None,
        notify: Sequence[str] | None = None,
        concurrency: Literal["allow", "forbid", "replace"] = "allow",
        catch_up: int = 1,
    ) -> ScheduleView:
        """Run ``definition`` (text, bytes, mapping, path or ``dagq.Workflow``) at every slot of
        ``cron`` (five fields) in ``timezone``; each run's id is ``{name}-{UTC slot}``. The same
        schedule again is found (idempotent); another of the same name is a 409."""
        body, content_type = definition_body(definition)
        query: dict[str, str | int | Sequence[str]] = {
            "name": name, "cron": cron, "timezone": timezone, "concurrency": concurrency,
            "catch_up": catch_up,
        }  # fmt: skip
        if params:
            query["param"] = [f"{key}={param_text(value)}" for key, value in params.items()]
        if notify:
            query["notify"] = list(notify)
        return self._model(
            ScheduleView, "POST", "/schedules", params=query, content=body,
            content_type=content_type, repeatable=True,
        )  # fmt: skip

    def schedules(self) -> ScheduleList:
        """Every schedule, by name, with its next slots and latest run."""
        return self._model(ScheduleList, "GET", "/schedules")

    def schedule(self, name: str) -> ScheduleView:
        """One schedule with its next slots and latest runs (newest first, with status)."""
        return self._model(ScheduleView, "GET", f"/schedules/{segment(name)}")

    def pause_schedule(self, name: str) -> ScheduleView:
        """Pause a schedule: no slot starts until it is resumed (idempotent)."""
        path = f"/schedules/{segment(name)}/pause"
        return self._model(ScheduleView, "POST", path, repeatable=True)

    def resume_schedule(self, name: str) -> ScheduleView:
        """Resume a schedule: the slots after now start; the pause's are not caught up."""
        path = f"/schedules/{segment(name)}/resume"
        return self._model(ScheduleView, "POST", path, repeatable=True)

    def delete_schedule(self, name: str) -> ScheduleDeleted:
        """Delete a schedule (its runs stay); idempotent."""
        return self._model(ScheduleDeleted, "DELETE", f"/schedules/{segment(name)}")
