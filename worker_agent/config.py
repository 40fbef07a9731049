"""The worker agent's settings: every option from the command line or a ``DAGQ_WORKER_*`` variable.

Storage (connection string or account, prefix) is not here: it comes from
``shared.settings.Settings`` (``DAGQ_STORAGE``, ``DAGQ_STORAGE__accountName``, ``DAGQ_PREFIX``),
exactly as the Functions app reads it, so a worker and the coordinator always address the same
account and resource names.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from shared.errors import ConfigError
from shared.names import queue_name_problem
from worker_agent.task_env import forbidden_patterns

DEFAULT_METADATA_URL = "http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01"
"""Azure Scheduled Events on the instance metadata service (reachable only from an Azure VM)."""

MAX_OUTPUT_BYTES = 100 * 1024 * 1024
"""Default largest task output (the JSON file at $DAGQ_OUTPUT) a worker uploads."""


def _default_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def _default_work_dir() -> Path:
    return Path(tempfile.gettempdir()) / "dagq-worker"


def _split_list(value: Any) -> Any:
    """Accept ``a,b c`` (environment, CLI) as well as a real list."""
    if isinstance(value, str):
        return [part for part in value.replace(",", " ").split() if part]
    return value


class WorkerSettings(BaseSettings):
    """How one worker agent polls, runs and reports. Field descriptions are the ``--help`` text."""

    model_config = SettingsConfigDict(
        env_prefix="DAGQ_WORKER_", extra="ignore", frozen=True, populate_by_name=True
    )

    queues: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Queues to poll, highest priority first, as named in workflow definitions "
        "(e.g. 'gpu cpu'): the next queue is polled only when the previous one is empty.",
    )
    concurrency: int | None = Field(
        default=None,
        ge=1,
        description="Parallel task slots. Default: the number of GPU groups when --gpus is set, "
        "else 1.",
    )
    gpus: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="GPU ids this worker may hand out (e.g. '0,1,2,3'), or 'auto' to ask "
        "nvidia-smi. Each slot gets its own --gpus-per-task of them as CUDA_VISIBLE_DEVICES; "
        "running tasks never share a GPU. Empty: CUDA_VISIBLE_DEVICES is left as inherited.",
    )
    gpus_per_task: int = Field(default=1, ge=1, description="GPUs given to each task slot.")
    visibility_s: int = Field(
        default=60,
        ge=1,
        le=7 * 24 * 3600,
        description="Visibility timeout of a received task message: if this worker dies, the "
        "message reappears for another worker after at most this long (for a task held longer "
        "than four times this: a quarter of that time, at most --visibility-max-s).",
    )
    visibility_max_s: int = Field(
        default=300,
        ge=1,
        le=7 * 24 * 3600,
        description="Longest visibility a running task's heartbeat asks for: past --visibility-s "
        "it grows to a quarter of the time the message has been held, so a long task's message "
        "is extended less often; if its worker dies it reappears after at most this long. Equal "
        "to --visibility-s: a fixed visibility.",
    )
    heartbeat_s: float | None = Field(
        default=None,
        gt=0,
        description="How often a running task's message visibility is extended. Default: a third "
        "of the visibility asked for (--visibility-s, growing to --visibility-max-s for a long "
        "task). Must be below --visibility-s.",
    )
    started_after_s: float = Field(
        default=3.0,
        ge=0,
        description="Post a 'started' event once a task has run this long; shorter tasks report "
        "their start time in their completion instead.",
    )
    cancel_check_s: float = Field(
        default=5.0,
        gt=0,
        description="First interval between a running task's checks of whether its workflow was "
        "cancelled; the interval then grows to a quarter of the task's age, up to "
        "--cancel-check-max-s. A cancelled task is stopped within that interval "
        "(+ --kill-grace-s).",
    )
    cancel_check_max_s: float = Field(
        default=30.0,
        gt=0,
        description="Longest interval between a running task's cancel checks (reached once it "
        "has run four times as long): the bound on stopping a long task after a cancel. Equal to "
        "--cancel-check-s: a fixed interval.",
    )
    kill_grace_s: float = Field(
        default=10.0,
        ge=0,
        description="After SIGTERM to a task's process group (cancel, timeout, shutdown), wait "
        "this long before SIGKILL.",
    )
    shutdown_grace_s: float = Field(
        default=30.0,
        ge=0,
        description="On SIGTERM (or a preemption notice) running tasks get this long to finish; "
        "then they are stopped and their messages made visible again for another worker.",
    )
    idle_timeout_s: float = Field(
        default=0.0,
        ge=0,
        description="Exit after being idle (all slots free, all queues empty) this long, for "
        "scale-to-zero. 0: never.",
    )
    min_poll_s: float = Field(
        default=0.1,
        gt=0,
        description="First wait after polling every queue and finding them empty; doubles up to "
        "--max-poll-s while they stay empty (one idle slot polls for all of them).",
    )
    max_poll_s: float = Field(
        default=0.5,
        gt=0,
        description="Longest wait between polls of empty queues: bounds how long a ready task "
        "waits for an idle worker; an idle worker makes 86400/max_poll_s receives a day per queue.",
    )
    work_dir: Path = Field(
        default_factory=_default_work_dir,
        description="Root of per-attempt work directories (the default cwd of a task); a relative "
        "task cwd is resolved under it and may not leave it.",
    )
    keep_work_dirs: bool = Field(
        default=False,
        description="Keep each attempt's directory (work dir, output, log) after it is reported.",
    )
    max_deliveries: int = Field(
        default=20,
        ge=0,
        description="A task message received more often than this (its workers kept dying or "
        "being preempted) is reported failed instead of run again. 0: no limit.",
    )
    max_output_bytes: int = Field(
        default=MAX_OUTPUT_BYTES,
        gt=0,
        description="Largest task output file ($DAGQ_OUTPUT) accepted; larger fails the attempt.",
    )
    max_log_bytes: int = Field(
        default=64 * 1024 * 1024,
        gt=1024,
        description="Largest log uploaded per attempt; a longer log keeps its first and last "
        "halves around a truncation marker.",
    )
    live_s: float = Field(
        default=5.0,
        ge=0.05,
        description="How often a running task's $DAGQ_PROGRESS file is read, and the first "
        "interval between appends of its new log output to its log blob (at most one storage "
        "write per interval per task, none when it printed nothing); the append interval then "
        "grows to a quarter of the task's age, up to --live-max-s.",
    )
    live_max_s: float = Field(
        default=20.0,
        gt=0,
        description="Longest interval between a running task's log appends: how stale the live "
        "log of a long task may be. Equal to --live-s: a fixed interval.",
    )
    progress_s: float | None = Field(
        default=None,
        gt=0,
        description="Soonest a running task's changed progress is sent to the worker registry "
        "after its previous heartbeat. Default: --registry-s (progress rides the regular "
        "heartbeat, no extra writes).",
    )
    task_env: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Worker environment variables tasks inherit besides PATH, HOME, LANG, LC_*, "
        "TZ, TMPDIR, LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES... (names, '*' matches a suffix, "
        "e.g. 'HF_HOME WANDB_*'). Credentials (AZURE_*, IDENTITY_*, MSI_*, DAGQ_STORAGE*...) "
        "are never passed on.",
    )
    task_user: str | None = Field(
        default=None,
        description="Run tasks as this user instead of the agent's own, so they can read neither "
        "the agent's environment nor its settings file (the agent must run as root; each "
        "attempt's directory is handed to the user). The VM Scale Set and AKS set 'dagq-task'.",
    )
    cgroups: Literal["auto", "off"] = Field(
        default="auto",
        description="Run each task in its own cgroup v2 group and kill the whole group on "
        "cancel/timeout/shutdown, so a process that left the task's process group (setsid) "
        "cannot survive it. auto: where the agent may create cgroups (root, or systemd "
        "Delegate=yes), else process groups only; off: process groups only.",
    )
    scheduled_events: bool = Field(
        default=False,
        description="Watch Azure Scheduled Events (--metadata-url) for Preempt/Terminate notices "
        "and hand running tasks back before the VM goes, then acknowledge the event so Azure "
        "proceeds at once. Off by default so that nothing probes "
        "the metadata address off Azure; the VM Scale Set and AKS deployments turn it on.",
    )
    scheduled_events_ack: bool = Field(
        default=True,
        description="After handing tasks back on a Scheduled Events notice, acknowledge it "
        "so Azure proceeds at once (the last agent sharing --work-dir acknowledges). Turn it "
        "off where agents on one machine share no work dir (AKS pods): one pod's "
        "acknowledgement would end the node under the others.",
    )
    verify_keys: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DAGQ_VERIFY_KEYS", "verify_keys"),
        description="The app's public key(s), comma-separated (DAGQ_VERIFY_KEYS, as the app's): "
        "a task message runs only if one of them signed it; any other is dead-lettered before it "
        "is claimed. Unset: messages are not verified (a warning at start).",
    )
    metadata_url: str = Field(
        default=DEFAULT_METADATA_URL,
        description="Scheduled Events endpoint (with --scheduled-events). The first request may "
        "take up to two minutes (it enables the service); failures are retried with backoff; "
        "only an unreachable address turns the watcher off.",
    )
    metadata_poll_s: float = Field(
        default=1.0,
        gt=0,
        description="How often the Scheduled Events endpoint is polled (a Preempt gives 30 s).",
    )
    scale_in_protection: bool = Field(
        default=False,
        description="On a VM Scale Set instance: protect this VM from scale-in while a task runs "
        "and clear it when the VM is idle (ARM, with the managed identity AZURE_CLIENT_ID and "
        "the instance metadata service at --metadata-url's host), so autoscale removes idle VMs, "
        "not busy ones. Off by default so that nothing calls the metadata address or ARM off "
        "Azure; the VM Scale Set's cloud-init turns it on.",
    )
    arm_url: str = Field(
        default="https://management.azure.com",
        description="Azure Resource Manager endpoint for --scale-in-protection.",
    )
    vm_name: str | None = Field(
        default=None,
        description="This VM's name as Scheduled Events lists it in 'Resources'. Default: asked "
        "from the instance metadata service, else the host name.",
    )
    vm_size: str = Field(
        default="",
        max_length=64,
        description="This machine's VM size (e.g. Standard_NC4as_T4_v3), kept with its uptime so "
        "that `dagq cost` prices the pool's VM-hours; the GPU pool's cloud-init sets it. Empty: "
        "the VM-hours are counted, not priced.",
    )
    registry_s: float = Field(
        default=20.0,
        ge=0.1,
        description="How often this worker writes its heartbeat (queues, busy slots, current "
        "tasks) to the worker registry that `dagq workers` and `dagq doctor` read.",
    )
    worker_id: str = Field(
        default_factory=_default_worker_id,
        description="Name of this worker in events and logs. Default: host name and pid.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Log level."
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="Log record format on stderr: readable text or JSON lines."
    )

    @field_validator("queues", "gpus", "task_env", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("queues")
    @classmethod
    def _valid_queues(cls, value: list[str]) -> list[str]:
        for queue in value:
            problem = queue_name_problem(queue)
            if problem:
                raise ValueError(problem)
        if len(set(value)) != len(value):
            raise ValueError("a queue is listed twice")
        return value

    @field_validator("task_env")
    @classmethod
    def _no_credentials(cls, value: list[str]) -> list[str]:
        bad = forbidden_patterns(value)
        if bad:
            raise ValueError(
                f"{', '.join(bad)}: a task may not inherit the worker's credentials or settings; "
                "pass what the task needs in its definition's env instead"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> WorkerSettings:
        if self.heartbeat_s is not None and self.heartbeat_s >= self.visibility_s:
            raise ConfigError(
                f"heartbeat_s ({self.heartbeat_s}) must be below visibility_s ({self.visibility_s})"
                ": set DAGQ_WORKER_HEARTBEAT_S / --heartbeat-s lower"
            )
        if self.max_poll_s < self.min_poll_s:
            raise ConfigError("max_poll_s must be at least min_poll_s")
        return self

    @property
    def heartbeat_interval_s(self) -> float:
        """The effective heartbeat interval."""
        return self.heartbeat_s if self.heartbeat_s is not None else self.visibility_s / 3

    def require_queues(self) -> list[str]:
        """The queues to poll; a worker without any is a configuration error."""
        if not self.queues:
            raise ConfigError(
                "no queues to poll: pass them as arguments (dagq-worker gpu cpu) or set "
                "DAGQ_WORKER_QUEUES"
            )
        return self.queues
