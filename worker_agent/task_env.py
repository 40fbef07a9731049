"""The environment a task runs with: an allowlist of the worker's variables, never its credentials.

A task inherits only the worker variables named here (and those the operator adds with
``--task-env``); everything else the worker holds — ``AZURE_*`` (client id, tenant, secrets),
``IDENTITY_*`` / ``MSI_*`` (managed identity endpoints), ``AZURE_FEDERATED_TOKEN_FILE`` (workload
identity), ``DAGQ_STORAGE*`` and the other storage and telemetry settings — stays with the worker.
Then come the task's own ``env`` from its definition and the ``DAGQ_*`` contract variables, which
nothing can override.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from shared.messages import TaskMessage

if TYPE_CHECKING:
    from worker_agent.files import AttemptPaths

INHERITED = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    "TMPDIR",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "DAGQ_EXAMPLES_DIR",
)
"""Worker variables every task inherits (``*`` matches any suffix): the basics a shell and CUDA
need, and the example pipeline's ``DAGQ_EXAMPLES_DIR``."""

NEVER_INHERITED = (
    "AZURE_*",
    "IDENTITY_*",
    "MSI_*",
    "IMDS_*",
    "AZUREWEBJOBS*",
    "APPLICATIONINSIGHTS_*",
    "DAGQ_STORAGE*",
    "DAGQ_API_*",
    "DAGQ_WORKER_*",
)
"""Credentials and the worker's own settings: refused even when ``--task-env`` names them."""


PARAM_ENV_PREFIX = "DAGQ_PARAM_"
"""Prefix of a workflow parameter's variable: the name the compiler fills ``{{ params.NAME }}``
from when a value holds a line break (``shared.definition.templating.PARAM_ENV_PREFIX``, which
the worker may not import; a test keeps the two equal)."""


def _matches(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


def forbidden_patterns(extra: Iterable[str]) -> list[str]:
    """The entries of an extra allowlist that would let a credential through (a config error)."""
    probes = ("AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "IDENTITY_ENDPOINT",
              "MSI_SECRET", "DAGQ_STORAGE", "DAGQ_STORAGE__ACCOUNTNAME", "DAGQ_API_KEY",
              "AZUREWEBJOBSSTORAGE", "APPLICATIONINSIGHTS_CONNECTION_STRING")  # fmt: skip
    bad = []
    for pattern in extra:
        if _matches(pattern, NEVER_INHERITED) or any(
            fnmatch.fnmatchcase(probe, pattern.upper()) for probe in probes
        ):
            bad.append(pattern)
    return bad


def inherited(base: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The worker variables a task may see: allowlisted, and never a credential."""
    allowed = (*INHERITED, *extra)
    return {
        name: value
        for name, value in base.items()
        if _matches(name, allowed) and not _matches(name, NEVER_INHERITED)
    }


def task_environment(
    base: Mapping[str, str],
    message: TaskMessage,
    paths: AttemptPaths,
    devices: str | None,
    extra: Iterable[str] = (),
) -> dict[str, str]:
    """The allowlisted worker variables, the task's env, the workflow's parameters
    (``DAGQ_PARAM_<NAME>``), then the DAGQ_* contract."""
    env = inherited(base, extra)
    env.update(message.env)
    if message.params:
        env.update((PARAM_ENV_PREFIX + name, value) for name, value in message.params.items())
    env.update(
        DAGQ_WORKFLOW_ID=message.workflow_id,
        DAGQ_TASK=message.task,
        DAGQ_ATTEMPT=str(message.attempt),
        DAGQ_OUTPUT=str(paths.output),
        DAGQ_UPSTREAM=str(paths.upstream),
        DAGQ_PROGRESS=str(paths.progress),
    )
    if devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = devices  # the slot's GPUs win over the task env: no sharing
    return env
