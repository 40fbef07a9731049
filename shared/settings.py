"""dagq's settings, read once from the environment (pydantic-settings).

Storage is addressed the way the Functions host addresses a binding connection named
``DAGQ_STORAGE``, so the queue trigger and dagq's own clients always talk to the same account:

- ``DAGQ_STORAGE`` (or ``DAGQ_STORAGE_CONNECTION_STRING``): a connection string (Azurite or real);
- or ``DAGQ_STORAGE__accountName`` (or ``DAGQ_STORAGE_ACCOUNT``), or the three service URIs
  ``DAGQ_STORAGE__blobServiceUri`` / ``__queueServiceUri`` / ``__tableServiceUri``, authenticated
  with azure-identity's DefaultAzureCredential (managed identity in Azure;
  ``DAGQ_STORAGE__clientId`` selects a user-assigned identity).

Everything else has a ``DAGQ_`` name, listed on the fields below.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.deployment import DEFAULT_PARTITIONS, DEFAULT_PREFIX, check_prefix, parse_partitions
from shared.errors import ConfigError
from shared.limits import MAX_EXPANSIONS, MAX_TASKS, NOTIFY_DELIVERY_BOUND_S
from shared.names import ResourceNames

AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def azurite_connection_string(
    host: str = "127.0.0.1",
    blob: int = 10000,
    queue: int = 10001,
    table: int = 10002,
    key: str = AZURITE_KEY,
) -> str:
    """The Azurite connection string for the given host, ports and account key (default: the
    well-known development key; dagq's own stacks start Azurite with a key of their own)."""
    return (
        "DefaultEndpointsProtocol=http;"
        f"AccountName={AZURITE_ACCOUNT};AccountKey={key};"
        f"BlobEndpoint=http://{host}:{blob}/{AZURITE_ACCOUNT};"
        f"QueueEndpoint=http://{host}:{queue}/{AZURITE_ACCOUNT};"
        f"TableEndpoint=http://{host}:{table}/{AZURITE_ACCOUNT};"
    )


class Settings(BaseSettings):
    """Deployment-wide settings shared by the Functions app, the coordinator process and the CLI."""

    model_config = SettingsConfigDict(
        env_prefix="DAGQ_", extra="ignore", populate_by_name=True, frozen=True
    )
    """Each setting is read from ``DAGQ_`` + its name in capitals (``lease_s``: ``DAGQ_LEASE_S``);
    only the storage settings, named as the Functions host names a binding connection, spell out
    their variables (``env_names`` lists every one)."""

    # -- storage ------------------------------------------------------------------------------
    storage_connection_string: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DAGQ_STORAGE", "DAGQ_STORAGE_CONNECTION_STRING"),
        description="Connection string of the storage account (Azurite or real).",
    )
    storage_account: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DAGQ_STORAGE__accountName", "DAGQ_STORAGE_ACCOUNT"),
        description="Storage account name, used with DefaultAzureCredential.",
    )
    blob_service_uri: str | None = Field(
        default=None, validation_alias=AliasChoices("DAGQ_STORAGE__blobServiceUri")
    )
    queue_service_uri: str | None = Field(
        default=None, validation_alias=AliasChoices("DAGQ_STORAGE__queueServiceUri")
    )
    table_service_uri: str | None = Field(
        default=None, validation_alias=AliasChoices("DAGQ_STORAGE__tableServiceUri")
    )
    storage_client_id: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DAGQ_STORAGE__clientId", "AZURE_CLIENT_ID"),
        description="Client id of a user-assigned managed identity.",
    )
    signing_key: str | None = Field(
        default=None,
        repr=False,
        description="The app's private Ed25519 key (32 bytes, URL-safe base64: python -m"
        " shared.signing makes a pair): the app signs every task message and control event"
        " with it. The app only: never give it to workers.",
    )
    verify_keys: str | None = Field(
        default=None,
        description="The app's public key(s), comma-separated (two while a key is rotated):"
        " workers run only task messages, and the coordinator applies only control events,"
        " signed with one of them. Unset (with no DAGQ_SIGNING_KEY): nothing is verified.",
    )
    rbac_enforce: bool = Field(
        default=False,
        description="Check every storage call against infra/'s role assignments for the calling"
        " component's identity and refuse what Azure would refuse (a 403"
        " AuthorizationPermissionMismatch): for Azurite, which enforces no roles. The test suite"
        " and the local stacks turn it on; on Azure, Azure enforces them.",
    )
    rbac_usage: str | None = Field(
        default=None,
        description="With DAGQ_RBAC_ENFORCE: a file every process appends the permissions it"
        " used to (make rbac-check).",
    )
    prefix: str = Field(
        default=DEFAULT_PREFIX,
        description="Namespaces every container, table and queue of this deployment.",
    )

    # -- coordinator --------------------------------------------------------------------------
    partitions: int = Field(
        default=DEFAULT_PARTITIONS,
        description="Partitions new workflows are spread over (each: its own event queue, poison"
        " queue, lease and writer). Raising it affects only new workflows; see docs/capacity.md.",
    )
    lease_s: int = Field(
        default=30,
        ge=15,
        le=60,
        description="Coordinator lease duration; renewed while a pass runs.",
    )
    pass_budget_s: float = Field(
        default=20.0,
        gt=0,
        description="How long one coordinator pass keeps draining the event queue.",
    )
    event_visibility_s: int = Field(
        default=60,
        ge=5,
        description="Visibility timeout of events received by a pass; well above pass_budget_s.",
    )
    lost_dispatch_after_s: float = Field(
        default=24 * 3600.0,
        gt=0,
        description="A task queued this long without a start is re-sent (ready-repair).",
    )
    empty_queue_repair_after_s: float = Field(
        default=60.0,
        gt=0,
        description="A queued task whose queue holds no message at all is re-sent this long "
        "after it was sent (its message was lost), instead of after lost_dispatch_after_s.",
    )
    activate_repair_after_s: float = Field(
        default=30.0,
        gt=0,
        description="A pending workflow this old is activated by the sweep (its event was lost).",
    )
    inline_output_bytes: int = Field(
        default=4 * 1024,
        gt=0,
        le=32 * 1024,
        description=(
            "Largest task output kept inline in an event and in the state blob; larger ones live"
            " in the outputs container (the coordinator moves any larger inline output there)."
        ),
    )
    state_inline_bytes: int = Field(
        default=1024 * 1024,
        gt=0,
        description=(
            "Most inline output bytes one workflow's state holds; outputs beyond it are moved to"
            " the outputs container, so state blobs stay small whatever the workflow."
        ),
    )
    workflow_slice_s: float = Field(
        default=5.0,
        gt=0,
        description=(
            "Longest a pass spends loading one workflow and applying its events; past it the"
            " workflow's remaining events are set aside for a later pass (logged, counted)."
        ),
    )
    state_cache_mb: int = Field(
        default=64,
        ge=1,
        description=(
            "Memory each partition's coordinator keeps workflow states in between passes (an"
            " estimate of their decoded size): about 12,000 five-task workflows at 64, enough for"
            " a partition's active set so that passes and sweeps do not re-read states"
            " (docs/capacity.md)."
        ),
    )
    sweep_schedule: str = Field(
        default="*/30 * * * * *",
        description="NCRONTAB (seconds first) of the timer trigger that runs the sweeps. Every "
        "30 s: Flex Consumption bills each run at least 1 s, so the old 5 s cost ~$0.90 a day "
        "idle; 30 s keeps the repairs (activate after 30 s, an empty queue's lost dispatch after "
        "60 s) about on time (infra/README.md, 'Idle cost').",
    )

    # -- worker registry and doctor ----------------------------------------------------------
    worker_lost_after_s: float = Field(
        default=90.0,
        gt=0,
        description="A worker not seen for this long shows as lost: a few of its registry "
        "intervals (DAGQ_WORKER_REGISTRY_S, default 20 s).",
    )
    sweep_overdue_after_s: float = Field(
        default=300.0,
        gt=0,
        description="dagq doctor reports a partition whose sweeps have not run for this long.",
    )
    event_stuck_after_s: float = Field(
        default=60.0,
        gt=0,
        description="dagq doctor reports events visible this long while no coordinator holds "
        "the lease.",
    )
    clock_skew_s: float = Field(
        default=30.0,
        gt=0,
        description="dagq doctor reports a worker whose clock is off from storage's by more.",
    )
    dead_letter_window_s: float = Field(
        default=24 * 3600.0,
        gt=0,
        description="dagq doctor reports dead letters received within this window.",
    )
    worker_forget_after_s: float = Field(
        default=7 * 24 * 3600.0,
        gt=0,
        description="A lost worker's record is deleted once it has not been seen for this long.",
    )

    # -- API ----------------------------------------------------------------------------------
    prices: str | None = Field(
        default=None,
        description="The price table of cost estimates (dagq cost, GET /api/workflows/{id}/cost):"
        " a JSON or YAML file's path, or inline JSON; unset: illustrative defaults (docs/cost.md).",
    )
    gpu_vm_sku: str | None = Field(
        default=None,
        description="VM size of the deployment's GPU pool (the deployment sets it): without "
        "DAGQ_PRICES, the gpu queue is priced at its list price per GPU (docs/cost.md).",
    )
    max_definition_bytes: int = Field(
        default=4 * 1024 * 1024,
        gt=0,
        description="Largest accepted workflow definition body.",
    )
    max_expansion_width: int = Field(
        default=MAX_EXPANSIONS,  # as static foreach
        ge=1,
        le=MAX_TASKS,
        description="Most tasks one foreach_from may expand to at run time (a longer list fails"
        " the task); recorded in each workflow's definition at submit.",
    )

    # -- notifications (issue 29; docs/notifications.md) -------------------------------------
    notify_allow_private: bool = Field(
        default=False,
        description="Let webhooks reach loopback and private addresses (the local stack sets it);"
        " link-local addresses (169.254.0.0/16, the metadata endpoint) stay refused.",
    )
    notify_allow_http: bool = Field(
        default=False,
        description="Let webhooks use plain http:// (the local stack sets it); else https only.",
    )
    notify_retry_s: float = Field(
        default=NOTIFY_DELIVERY_BOUND_S,
        gt=0,
        description="How long a notification is retried, with backoff, before it is"
        " dead-lettered with its reason.",
    )
    eventgrid_endpoint: str | None = Field(
        default=None,
        description="An Event Grid custom topic's endpoint (infra's eventGridTopic parameter sets"
        " it): every workflow's end and task_failed also go there, as CloudEvents.",
    )
    public_url: str | None = Field(
        default=None,
        description="The app's base URL (https://<app>.azurewebsites.net) for the dashboard"
        " links of notifications; default: https:// and the host's WEBSITE_HOSTNAME.",
    )

    @field_validator("eventgrid_endpoint", "public_url", mode="before")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        # infra/ sets DAGQ_EVENTGRID_ENDPOINT to '' when there is no topic.
        return value.strip() or None if isinstance(value, str) else value

    @field_validator("prefix")
    @classmethod
    def _valid_prefix(cls, value: str) -> str:
        return check_prefix(value)

    @field_validator("partitions", mode="before")
    @classmethod
    def _valid_partitions(cls, value: str | int | None) -> int:
        return parse_partitions(value)

    @model_validator(mode="before")
    @classmethod
    def _named_as_variables(cls, data: Any) -> Any:
        """Values given by their variables' names (``Settings.model_validate(env)``, with
        ``DAGQ_LEASE_S`` for ``lease_s``) are taken as values given by name: ``env_prefix``
        names only the environment's variables."""
        if not isinstance(data, dict):
            return data
        named = dict(data)
        for key, value in data.items():
            name = key.lower().removeprefix("dagq_") if isinstance(key, str) else None
            field = cls.model_fields.get(name) if name and key.lower() != name else None
            if name is not None and field is not None and field.validation_alias is None:
                del named[key]
                named[name] = value
        return named

    @model_validator(mode="after")
    def _storage_is_addressed(self) -> Settings:
        has_uris = bool(self.blob_service_uri and self.queue_service_uri and self.table_service_uri)
        if not (self.storage_connection_string or self.storage_account or has_uris):
            raise ConfigError(
                "no storage configured: set DAGQ_STORAGE to a connection string, or "
                "DAGQ_STORAGE__accountName (or the three DAGQ_STORAGE__*ServiceUri settings) to "
                "use a managed identity"
            )
        return self

    @classmethod
    def env_names(cls) -> dict[str, tuple[str, ...]]:
        """Each setting -> the environment variables it is read from, in order of precedence."""
        prefix = cls.model_config.get("env_prefix", "")
        return {
            name: tuple(getattr(field.validation_alias, "choices", ()))
            or (f"{prefix}{name.upper()}",)
            for name, field in cls.model_fields.items()
        }

    @cached_property
    def names(self) -> ResourceNames:
        """Resource names for this deployment's prefix."""
        return ResourceNames(self.prefix)

    def service_uri(self, service: str) -> str:
        """The endpoint of ``blob``, ``queue`` or ``table`` when addressed by account or URI."""
        explicit = {
            "blob": self.blob_service_uri,
            "queue": self.queue_service_uri,
            "table": self.table_service_uri,
        }[service]
        if explicit:
            return explicit
        if not self.storage_account:
            raise ConfigError(f"no {service} endpoint: set DAGQ_STORAGE__accountName")
        return f"https://{self.storage_account}.{service}.core.windows.net"
