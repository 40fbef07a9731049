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

The package's modules: ``config`` (where the API is), ``transport`` (HTTP and ``ApiError``),
``models`` (the answers: ``shared.views``), ``operations`` (the ``Client``), ``wait``.
"""

from __future__ import annotations

from shared.client.config import DEFAULT_API_URL, KEY_HEADER, ClientConfig, config_file_path
from shared.client.errors import ApiError, ApiUnreachableError, WaitTimeoutError
from shared.client.models import (
    Accepted,
    CancelAccepted,
    RetryAccepted,
    Submitted,
    TaskDetail,
    TaskInfo,
    Workflow,
    WorkflowPage,
    WorkflowSummary,
)
from shared.client.operations import Client, Definition
from shared.client.wait import UpdateCallback

__all__ = [
    "DEFAULT_API_URL",
    "KEY_HEADER",
    "Accepted",
    "ApiError",
    "ApiUnreachableError",
    "CancelAccepted",
    "Client",
    "ClientConfig",
    "Definition",
    "RetryAccepted",
    "Submitted",
    "TaskDetail",
    "TaskInfo",
    "UpdateCallback",
    "WaitTimeoutError",
    "Workflow",
    "WorkflowPage",
    "WorkflowSummary",
    "config_file_path",
]
