"""The ``Client``: one method per API operation, answers parsed with the API's own views."""

from __future__ import annotations

import json
import secrets
import string
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import httpx
from pydantic import BaseModel, JsonValue, ValidationError

from shared.client.config import ClientConfig
from shared.client.cost import CostMixin
from shared.client.errors import ApiError
from shared.client.models import (
    CancelAccepted,
    RetryAccepted,
    Submitted,
    TaskDetail,
    Workflow,
    WorkflowPage,
    WorkflowSummary,
)
from shared.client.ops import OperationsMixin
from shared.client.schedules import SchedulesMixin
from shared.client.task_logs import TaskLogsMixin
from shared.client.transport import REPEATS, Transport, payload, segment, shape_error, snippet
from shared.client.wait import UpdateCallback, wait_for
from shared.errors import DagqError
from shared.names import new_workflow_id
from shared.states import TaskState
from shared.views import Graph


@runtime_checkable
class BuiltDefinition(Protocol):
    """A definition built in Python (``dagq.Workflow``): it gives its mapping."""

    def to_dict(self) -> dict[str, Any]: ...


Definition = str | bytes | Mapping[str, Any] | Path | BuiltDefinition
"""A workflow definition: YAML/JSON text or bytes, a parsed mapping, a file path, or a workflow
built in Python (anything with ``to_dict()``, such as ``dagq.Workflow``)."""

_M = TypeVar("_M", bound=BaseModel)


ParamValue = str | int | float | bool
"""A workflow parameter's value at submit (sent as text: ``true``/``false``, ``0.01``)."""


def param_text(value: ParamValue) -> str:
    """A parameter's value as text, as a task sees it in ``DAGQ_PARAM_<NAME>``: ``true`` or
    ``false`` for a bool, a float's shortest round-trip form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def param_query(params: Mapping[str, ParamValue]) -> list[str]:
    """``NAME=VALUE`` for each parameter: the submit's repeated ``param`` query parameter."""
    return [f"{name}={param_text(value)}" for name, value in params.items()]


def client_workflow_id() -> str:
    """A fresh workflow id in the API's format (``shared.names.new_workflow_id``), made by the
    client so that its submit can be repeated."""
    entropy = "".join(secrets.choice(_ID_ALPHABET) for _ in range(6))
    return new_workflow_id(time.time(), entropy)


_ID_ALPHABET = string.ascii_lowercase + string.digits


class Client(OperationsMixin, TaskLogsMixin, CostMixin, SchedulesMixin):
    """Synchronous client of one dagq deployment. Use as a context manager or call ``close``.

    The operations methods (``workers``, ``doctor``, ``delete``, ``purge``) come from
    ``shared.client.ops``; ``logs``, ``follow_log`` and ``attempts`` from
    ``shared.client.task_logs``; the cost methods (``workflow_cost``, ``cost``) from
    ``shared.client.cost``; the schedule methods (``create_schedule``, ``schedules``...) from
    ``shared.client.schedules``."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = 30.0,
        config_path: str | Path | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = ClientConfig.resolve(base_url, api_key, config_path=config_path)
        self._transport = Transport(self.config, timeout_s=timeout_s, transport=transport)

    @property
    def base_url(self) -> str:
        return self.config.api_url

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests (the methods shared.client.ops's mixin builds on) ------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self._transport.request(method, path, **kwargs)

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._transport.json(method, path, **kwargs)

    def _model(self, model: type[_M], method: str, path: str, **kwargs: Any) -> _M:
        return self._transport.model(model, method, path, **kwargs)

    # -- operations -------------------------------------------------------------------------
    def submit(
        self,
        definition: Definition,
        *,
        workflow_id: str | None = None,
        fmt: Literal["yaml", "json"] | None = None,
        no_cache: bool = False,
        refresh: Sequence[str] = (),
        params: Mapping[str, ParamValue] | None = None,
        notify: Sequence[str] | None = None,
    ) -> Submitted:
        """Submit a workflow definition (text, bytes, mapping, path or ``dagq.Workflow``). With
        ``workflow_id`` the submit is idempotent: the same id and definition return the existing
        workflow. ``no_cache``: no result is taken from or written to the result cache;
        ``refresh``: these cached tasks are recomputed and their entries replaced. ``params``:
        values of the workflow's parameters (``params:``), sent as text (a bool as true/false);
        ``notify``: webhook URLs told when the run ends (added to the definition's ``notify:``)."""
        if isinstance(definition, Path):
            return self.submit_file(
                definition, workflow_id=workflow_id, no_cache=no_cache, refresh=refresh,
                params=params, notify=notify,
            )  # fmt: skip
        if isinstance(definition, BuiltDefinition):
            definition = definition.to_dict()
        if isinstance(definition, Mapping):
            body = json.dumps(definition).encode()
            fmt = "json"
        elif isinstance(definition, str):
            body = definition.encode("utf-8")
        else:
            body = bytes(definition)
        if fmt is None:
            fmt = "json" if _is_json(body) else "yaml"
        content_type = "application/json" if fmt == "json" else "application/yaml"
        # Always with an id, so that a submit whose connection broke can be sent again: the
        # API answers a repeat (same id, same definition) with the workflow the first created.
        generated = not workflow_id
        query: dict[str, str | list[str]] = {"id": workflow_id or client_workflow_id()}
        if no_cache:
            query["no_cache"] = "true"
        if refresh:
            query["refresh"] = ",".join(refresh)
        if params:
            query["param"] = param_query(params)
        if notify:
            query["notify"] = list(notify)  # ?notify=URL, repeated
        response = self._request(
            "POST", "/workflows", params=query, content=body, content_type=content_type,
            repeatable=True,
        )  # fmt: skip
        data = payload(response)
        # A repeat that finds the id of our own making existing found what our first try
        # created (its answer was lost; no other submit picks that id).
        repeated = bool(response.extensions.get(REPEATS))
        created = response.status_code == 201 or (generated and repeated)
        try:
            return Submitted.model_validate({**data, "created": created})
        except ValidationError as exc:
            raise shape_error(response, exc) from None

    def submit_file(
        self,
        path: str | Path,
        *,
        workflow_id: str | None = None,
        no_cache: bool = False,
        refresh: Sequence[str] = (),
        params: Mapping[str, ParamValue] | None = None,
        notify: Sequence[str] | None = None,
    ) -> Submitted:
        """Submit the definition in a YAML or JSON file."""
        path = Path(path)
        try:
            body = path.read_bytes()
        except OSError as exc:
            raise DagqError(f"cannot read {path}: {exc.strerror or exc}") from None
        fmt: Literal["yaml", "json"] | None = "json" if path.suffix.lower() == ".json" else None
        return self.submit(
            body, workflow_id=workflow_id, fmt=fmt, no_cache=no_cache, refresh=refresh,
            params=params, notify=notify,
        )  # fmt: skip

    def get(self, workflow_id: str, *, tasks: bool = True) -> Workflow:
        """A workflow's status, per-state counts and (unless ``tasks=False``) its task table."""
        params = None if tasks else {"tasks": "false"}
        return self._model(Workflow, "GET", f"/workflows/{segment(workflow_id)}", params=params)

    def list(
        self,
        *,
        status: str | None = None,
        name: str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> WorkflowPage:
        """One page of workflows, newest first; pass ``page.next`` back for the next page."""
        params: dict[str, str | int] = {}
        if status:
            params["status"] = status
        if name:
            params["name"] = name
        if limit:
            params["limit"] = limit
        if next_token:
            params["next"] = next_token
        return self._model(WorkflowPage, "GET", "/workflows", params=params)

    def iter_workflows(
        self, *, status: str | None = None, name: str | None = None, page_size: int = 50
    ) -> Iterator[WorkflowSummary]:
        """Every matching workflow, newest first, following continuation tokens."""
        token: str | None = None
        while True:
            page = self.list(status=status, name=name, limit=page_size, next_token=token)
            yield from page.items
            if not page.next:
                return
            token = page.next

    def graph(self, workflow_id: str) -> Graph:
        """Every task's name, queue, foreach group and parents (``GET .../graph``)."""
        return self._model(Graph, "GET", f"/workflows/{segment(workflow_id)}/graph")

    def task(self, workflow_id: str, task: str) -> TaskDetail:
        """One task in detail (output, log location)."""
        path = f"/workflows/{segment(workflow_id)}/tasks/{segment(task)}"
        return self._model(TaskDetail, "GET", path)

    def cancel(self, workflow_id: str, *, reason: str | None = None) -> CancelAccepted:
        """Request cancellation (idempotent; also accepted for finished workflows)."""
        params = {"reason": reason} if reason else None
        return self._model(
            CancelAccepted, "POST", f"/workflows/{segment(workflow_id)}/cancel", params=params,
            repeatable=True,  # a cancel is idempotent, and accepted for finished workflows
        )  # fmt: skip

    def retry(self, workflow_id: str) -> RetryAccepted:
        """Rerun a finished workflow from its failures (409 while it is still running)."""
        return self._model(RetryAccepted, "POST", f"/workflows/{segment(workflow_id)}/retry")

    def health(self) -> dict[str, Any]:
        """The API's health report (storage; coordinator lease and event queue depths of partition
        0 at the top level and of every partition in ``partitions``)."""
        try:
            data = self._json("GET", "/health")
        except ApiError as exc:
            # 503 still carries the report: return it so callers can show what is wrong.
            if exc.status == 503 and isinstance(exc.extra, dict):
                return exc.extra
            raise
        return data if isinstance(data, dict) else {"health": data}

    def output(self, workflow_id: str, task: str) -> JsonValue:
        """The output value of a task's current attempt (fetched from blob storage when large).
        Raises ApiError 404 when the task has no output."""
        path = f"/workflows/{segment(workflow_id)}/tasks/{segment(task)}/output"
        response = self._request("GET", path)
        try:
            value: JsonValue = response.json()
        except ValueError:
            raise ApiError(
                response.status_code, "The task's output is not JSON", snippet(response.text)
            ) from None
        return value

    def outputs(self, workflow_id: str, task: str | None = None) -> dict[str, JsonValue]:
        """Task name -> output value, for ``task`` or for every completed task with an output."""
        if task is not None:
            return {task: self.output(workflow_id, task)}
        result: dict[str, JsonValue] = {}
        for name, info in self.get(workflow_id).tasks.items():
            if info.state != TaskState.COMPLETED:
                continue
            try:
                result[name] = self.output(workflow_id, name)
            except ApiError as exc:
                if not exc.is_not_found:  # 404: this task wrote no output
                    raise
        return result

    def wait(
        self,
        workflow_id: str,
        *,
        on_update: UpdateCallback | None = None,
        interval_s: float = 1.0,
        timeout_s: float | None = None,
        tasks: bool = False,
        min_run: int = 1,
        max_failures: int = 5,
    ) -> Workflow:
        """Poll until the workflow is completed, failed or cancelled and return it.

        ``on_update`` is called with every snapshot (a progress callback). ``min_run`` waits for
        that run to finish (after ``retry``, pass ``accepted.run``: until the coordinator applies
        the rerun, the workflow still shows the previous run's end). Up to ``max_failures``
        transient errors in a row (no answer, 429, 5xx) are waited out with a growing pause, so
        a long wait survives a restart of the app. Raises :class:`WaitTimeoutError` after
        ``timeout_s`` seconds.
        """
        return wait_for(
            lambda: self.get(workflow_id, tasks=tasks),
            workflow_id,
            on_update=on_update,
            interval_s=interval_s,
            timeout_s=timeout_s,
            min_run=min_run,
            max_failures=max_failures,
        )


def _is_json(body: bytes) -> bool:
    """JSON is also YAML, but a YAML flow mapping (``{name: x}``) is not JSON: look closer."""
    if body.lstrip()[:1] not in (b"{", b"["):
        return False
    try:
        json.loads(body)
    except ValueError:
        return False
    return True
