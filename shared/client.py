"""A small synchronous Python client for the dagq HTTP API (the ``dagq`` CLI is built on it).

    from shared.client import Client

    with Client() as dagq:                       # DAGQ_API_URL / DAGQ_API_KEY / config file
        wf = dagq.submit_file("examples/pipeline.yaml")
        final = dagq.wait(wf.id, on_update=lambda w: print(w.status, w.counts))
        print(final.status, dagq.outputs(wf.id))

Where the client finds the API (first match wins, per setting):

1. arguments: ``Client(base_url=..., api_key=...)`` (the CLI's ``--api-url`` / ``--api-key``);
2. the environment: ``DAGQ_API_URL``, ``DAGQ_API_KEY``;
3. a config file: ``$DAGQ_CONFIG``, else ``$XDG_CONFIG_HOME/dagq/config.toml`` (default
   ``~/.config/dagq/config.toml``) with top-level keys ``api_url`` and ``api_key``;
4. the default ``http://127.0.0.1:7071`` (the local stack of ``make up``) and no key.

The function key travels in the ``x-functions-key`` header. Every error the API reports (RFC 7807
problem details) is raised as :class:`ApiError` with its ``status``, ``title``, ``detail`` and
``errors``; a server that cannot be reached raises :class:`ApiUnreachableError`.
"""

from __future__ import annotations

import json
import os
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from shared.errors import ApiError, ApiUnreachableError, DagqError, WaitTimeoutError
from shared.ops.client import OperationsMixin
from shared.states import TERMINAL_TASK_STATES, WorkflowStatus

__all__ = [
    "Accepted",
    "ApiError",
    "ApiUnreachableError",
    "Client",
    "ClientConfig",
    "Submitted",
    "TaskDetail",
    "TaskInfo",
    "WaitTimeoutError",
    "Workflow",
    "WorkflowPage",
    "WorkflowSummary",
    "config_file_path",
]

DEFAULT_API_URL = "http://127.0.0.1:7071"
"""Where ``make up`` serves the API when nothing else is configured."""

KEY_HEADER = "x-functions-key"
"""Azure Functions reads a function key from this header."""

TERMINAL_STATUSES = frozenset(
    {WorkflowStatus.COMPLETED.value, WorkflowStatus.FAILED.value, WorkflowStatus.CANCELLED.value}
)

# -- configuration ---------------------------------------------------------------------------


class ClientConfig(BaseModel):
    """Where the API is and how to authenticate."""

    model_config = ConfigDict(frozen=True)

    api_url: str = DEFAULT_API_URL
    api_key: str | None = None
    source: str = "default"
    """Where ``api_url`` came from (argument, environment, a config file path, default)."""

    @classmethod
    def resolve(
        cls,
        api_url: str | None = None,
        api_key: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        config_path: str | Path | None = None,
    ) -> ClientConfig:
        """Combine arguments, environment and config file in that order of precedence."""
        env = os.environ if env is None else env
        file_values, file_path = _read_config_file(config_path, env)
        url, source = api_url, "argument"
        if not url and env.get("DAGQ_API_URL"):
            url, source = env["DAGQ_API_URL"], "environment (DAGQ_API_URL)"
        if not url and file_values.get("api_url"):
            url, source = str(file_values["api_url"]), str(file_path)
        if not url:
            url, source = DEFAULT_API_URL, "default"
        key = api_key or env.get("DAGQ_API_KEY") or file_values.get("api_key") or None
        return cls(api_url=_normalise_url(url), api_key=key, source=source)


def config_file_path(env: Mapping[str, str] | None = None) -> Path:
    """The config file the client reads (it need not exist)."""
    env = os.environ if env is None else env
    if env.get("DAGQ_CONFIG"):
        return Path(env["DAGQ_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "dagq" / "config.toml"


def _read_config_file(
    path: str | Path | None, env: Mapping[str, str]
) -> tuple[dict[str, Any], Path]:
    chosen = Path(path).expanduser() if path else config_file_path(env)
    if not chosen.is_file():
        if path or env.get("DAGQ_CONFIG"):
            raise DagqError(f"config file {chosen} does not exist (set by DAGQ_CONFIG or --config)")
        return {}, chosen
    try:
        values = tomllib.loads(chosen.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise DagqError(f"cannot read config file {chosen}: {exc}") from None
    unknown = sorted(set(values) - {"api_url", "api_key"})
    if unknown:
        raise DagqError(
            f"config file {chosen}: unknown key(s) {', '.join(unknown)}; expected api_url, api_key"
        )
    return values, chosen


def _normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise DagqError(f"API URL {url!r} must start with http:// or https://")
    # Accept both the host root and the /api route prefix.
    return url.removesuffix("/api")


# -- results ---------------------------------------------------------------------------------


class _Result(BaseModel):
    # Tolerant of fields newer servers add.
    model_config = ConfigDict(extra="allow", frozen=True)


class Submitted(_Result):
    """What submit returns."""

    id: str
    status: str
    url: str | None = None
    created: bool = True
    """False when an idempotent submit (same id, same definition) found the workflow existing."""


class TaskInfo(_Result):
    """One task of a workflow, as listed by ``get``."""

    state: str
    attempt: int = 0
    queue: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    error: str | None = None


class WorkflowSummary(_Result):
    """One row of ``list`` (from the index: may lag the state blob by a moment)."""

    id: str
    name: str = ""
    status: str
    run: int = 1
    """1 at submit, +1 for each rerun from failure."""
    created_at: float | None = None
    updated_at: float | None = None
    finished_at: float | None = None
    total: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    """Task state -> number of tasks in it."""
    queues: list[str] = Field(default_factory=list)
    cancel_requested: bool = False
    error: str | None = None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def finished(self) -> int:
        """Tasks in a terminal state."""
        return sum(n for state, n in self.counts.items() if state in TERMINAL_TASK_STATES)


class Workflow(WorkflowSummary):
    """A workflow as the state blob has it (authoritative), with its tasks."""

    tasks: dict[str, TaskInfo] = Field(default_factory=dict)
    """Task name -> its state; empty when fetched with ``tasks=False``."""


class WorkflowPage(_Result):
    """One page of ``list``: ``next`` is the continuation token, None at the end."""

    items: list[WorkflowSummary] = Field(default_factory=list)
    next: str | None = None


class TaskDetail(TaskInfo):
    """One task in detail: its command, output reference and where its log is."""

    name: str
    cmd: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    output: dict[str, Any] | None = None
    """``{"inline": value, "size": n}`` or ``{"blob": name, "container": c, "size": n}``."""
    log: dict[str, Any] | None = None
    """``{"container": c, "blob": name}`` once the worker uploaded a log."""


class Accepted(_Result):
    """What cancel and retry return (202)."""

    id: str
    status: str
    """The workflow's status when the request was accepted."""
    run: int | None = None
    """retry: the number of the run that will start."""
    cancel_requested: bool | None = None
    """cancel: False when the workflow had already finished (nothing to cancel)."""
    detail: str | None = None
    url: str | None = None


# -- the client ------------------------------------------------------------------------------

Definition = str | bytes | Mapping[str, Any] | Path
"""A workflow definition: YAML/JSON text or bytes, a parsed mapping, or a file path."""

UpdateCallback = Callable[[Workflow], None]
_M = TypeVar("_M", bound=BaseModel)


class Client(OperationsMixin):
    """Synchronous client of one dagq deployment. Use as a context manager or call ``close``.

    The operations methods (``workers``, ``doctor``, ``delete``, ``purge``) come from
    ``shared.ops.client``."""

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
        headers = {"accept": "application/json", "user-agent": "dagq-client/0.1"}
        if self.config.api_key:
            headers[KEY_HEADER] = self.config.api_key
        self._http = httpx.Client(
            base_url=self.config.api_url + "/api",
            headers=headers,
            timeout=timeout_s,
            transport=transport,
        )

    @property
    def base_url(self) -> str:
        return self.config.api_url

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests ---------------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> httpx.Response:
        headers = {"content-type": content_type} if content_type else None
        try:
            response = self._http.request(
                method, path, params=params, content=content, headers=headers
            )
        except httpx.TimeoutException as exc:
            raise ApiUnreachableError(
                f"the dagq API at {self.base_url} did not answer in time ({type(exc).__name__});"
                " is it running and reachable?"
            ) from None
        except httpx.TransportError as exc:
            raise ApiUnreachableError(
                f"cannot reach the dagq API at {self.base_url} ({exc or type(exc).__name__})."
                " Start the local stack with `make up`, or set DAGQ_API_URL"
                f" (URL from: {self.config.source})"
            ) from None
        if response.status_code >= 400:
            raise _problem(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError:
            raise ApiError(
                response.status_code,
                "The API returned something that is not JSON",
                _snippet(response.text),
                url=str(response.url),
            ) from None

    # -- operations -------------------------------------------------------------------------
    def submit(
        self,
        definition: Definition,
        *,
        workflow_id: str | None = None,
        fmt: Literal["yaml", "json"] | None = None,
    ) -> Submitted:
        """Submit a workflow definition (text, bytes, mapping or path). With ``workflow_id`` the
        submit is idempotent: the same id and definition return the existing workflow."""
        if isinstance(definition, Path):
            return self.submit_file(definition, workflow_id=workflow_id)
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
        params = {"id": workflow_id} if workflow_id else None
        response = self._request(
            "POST", "/workflows", params=params, content=body, content_type=content_type
        )
        data = _payload(response)
        try:
            return Submitted.model_validate({**data, "created": response.status_code == 201})
        except ValidationError as exc:
            raise _shape_error(response, exc) from None

    def submit_file(self, path: str | Path, *, workflow_id: str | None = None) -> Submitted:
        """Submit the definition in a YAML or JSON file."""
        path = Path(path)
        try:
            body = path.read_bytes()
        except OSError as exc:
            raise DagqError(f"cannot read {path}: {exc.strerror or exc}") from None
        fmt: Literal["yaml", "json"] | None = "json" if path.suffix.lower() == ".json" else None
        return self.submit(body, workflow_id=workflow_id, fmt=fmt)

    def get(self, workflow_id: str, *, tasks: bool = True) -> Workflow:
        """A workflow's status, per-state counts and (unless ``tasks=False``) its task table."""
        params = None if tasks else {"tasks": "false"}
        return self._model(Workflow, "GET", f"/workflows/{_seg(workflow_id)}", params=params)

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

    def task(self, workflow_id: str, task: str) -> TaskDetail:
        """One task in detail (output, log location)."""
        path = f"/workflows/{_seg(workflow_id)}/tasks/{_seg(task)}"
        return self._model(TaskDetail, "GET", path)

    def cancel(self, workflow_id: str, *, reason: str | None = None) -> Accepted:
        """Request cancellation (idempotent; also accepted for finished workflows)."""
        params = {"reason": reason} if reason else None
        return self._model(
            Accepted, "POST", f"/workflows/{_seg(workflow_id)}/cancel", params=params
        )

    def retry(self, workflow_id: str) -> Accepted:
        """Rerun a finished workflow from its failures (409 while it is still running)."""
        return self._model(Accepted, "POST", f"/workflows/{_seg(workflow_id)}/retry")

    def health(self) -> dict[str, Any]:
        """The API's health report (storage, coordinator lease, event queue depth)."""
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
        path = f"/workflows/{_seg(workflow_id)}/tasks/{_seg(task)}/output"
        response = self._request("GET", path)
        try:
            value: JsonValue = response.json()
        except ValueError:
            raise ApiError(
                response.status_code, "The task's output is not JSON", _snippet(response.text)
            ) from None
        return value

    def outputs(self, workflow_id: str, task: str | None = None) -> dict[str, JsonValue]:
        """Task name -> output value, for ``task`` or for every completed task with an output."""
        if task is not None:
            return {task: self.output(workflow_id, task)}
        result: dict[str, JsonValue] = {}
        for name, info in self.get(workflow_id).tasks.items():
            if info.state != "completed":
                continue
            try:
                result[name] = self.output(workflow_id, name)
            except ApiError as exc:
                if not exc.is_not_found:  # 404: this task wrote no output
                    raise
        return result

    def logs(self, workflow_id: str, task: str) -> str:
        """The combined stdout and stderr of the task's current attempt."""
        path = f"/workflows/{_seg(workflow_id)}/tasks/{_seg(task)}/log"
        return self._request("GET", path).content.decode("utf-8", errors="replace")

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
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        failures = 0
        while True:
            try:
                workflow = self.get(workflow_id, tasks=tasks)
            except (ApiUnreachableError, ApiError) as exc:
                transient = isinstance(exc, ApiUnreachableError) or (
                    exc.status == 429 or exc.status >= 500
                )
                failures += 1
                if not transient or failures > max_failures:
                    raise
                if deadline is not None and time.monotonic() >= deadline:
                    raise WaitTimeoutError(
                        f"workflow {workflow_id}: no answer from the API for the last"
                        f" {failures} tries, and {timeout_s:g} s have passed"
                    ) from exc
                time.sleep(min(interval_s * 2**failures, 15.0))
                continue
            failures = 0
            if on_update is not None:
                on_update(workflow)
            if workflow.is_terminal and workflow.run >= min_run:
                return workflow
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeoutError(
                    f"workflow {workflow_id} is still {workflow.status} after {timeout_s:g} s"
                )
            time.sleep(interval_s)

    # -- helpers ----------------------------------------------------------------------------
    def _model(self, model: type[_M], method: str, path: str, **kwargs: Any) -> _M:
        data = self._json(method, path, **kwargs)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise ApiError(
                200, "The API's answer has an unexpected shape", str(exc).splitlines()[0]
            ) from None


def _is_json(body: bytes) -> bool:
    """JSON is also YAML, but a YAML flow mapping (``{name: x}``) is not JSON: look closer."""
    if body.lstrip()[:1] not in (b"{", b"["):
        return False
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def _seg(value: str) -> str:
    """One URL path segment, escaped (ids and task names are validated server-side too)."""
    return quote(value, safe="")


def _payload(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ApiError(
            response.status_code,
            "The API returned something that is not a JSON object",
            _snippet(response.text),
        )
    return data


def _shape_error(response: httpx.Response, exc: ValidationError) -> ApiError:
    return ApiError(
        response.status_code,
        "The API's answer has an unexpected shape",
        str(exc).splitlines()[0],
        url=str(response.url),
    )


def _snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_REASONS = {
    401: "Unauthorized: set DAGQ_API_KEY (or --api-key) to a function key of the app",
    403: "Forbidden: the function key was not accepted",
}


def _problem(response: httpx.Response) -> ApiError:
    """Turn an error response into ApiError, reading RFC 7807 problem details when present."""
    status = response.status_code
    data: Any = None
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        errors = data.get("errors")
        error = ApiError(
            status,
            str(data.get("title") or _REASONS.get(status) or response.reason_phrase or "Error"),
            str(data["detail"]) if data.get("detail") is not None else None,
            errors if isinstance(errors, list) else None,
            type_=str(data["type"]) if data.get("type") else None,
            url=str(response.url),
        )
        error.extra = data
        return error
    title = _REASONS.get(status) or response.reason_phrase or f"HTTP {status}"
    error = ApiError(status, title, _snippet(response.text) or None, url=str(response.url))
    error.extra = None
    return error
