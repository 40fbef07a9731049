"""The environment variables dagq's settings are read from are part of every deployment (infra/,
local.settings.json, the docs): their names never change by accident.

``Settings`` reads ``DAGQ_`` + a field's name (pydantic-settings' ``env_prefix``); only the storage
settings name their variables as the Functions host names a binding connection's.
"""

from __future__ import annotations

import pytest

from shared.settings import Settings

ENV_NAMES = {
    "storage_connection_string": ("DAGQ_STORAGE", "DAGQ_STORAGE_CONNECTION_STRING"),
    "storage_account": ("DAGQ_STORAGE__accountName", "DAGQ_STORAGE_ACCOUNT"),
    "blob_service_uri": ("DAGQ_STORAGE__blobServiceUri",),
    "queue_service_uri": ("DAGQ_STORAGE__queueServiceUri",),
    "table_service_uri": ("DAGQ_STORAGE__tableServiceUri",),
    "storage_client_id": ("DAGQ_STORAGE__clientId", "AZURE_CLIENT_ID"),
    "signing_key": ("DAGQ_SIGNING_KEY",),
    "verify_keys": ("DAGQ_VERIFY_KEYS",),
    "rbac_enforce": ("DAGQ_RBAC_ENFORCE",),
    "rbac_usage": ("DAGQ_RBAC_USAGE",),
    "prefix": ("DAGQ_PREFIX",),
    "partitions": ("DAGQ_PARTITIONS",),
    "lease_s": ("DAGQ_LEASE_S",),
    "pass_budget_s": ("DAGQ_PASS_BUDGET_S",),
    "event_visibility_s": ("DAGQ_EVENT_VISIBILITY_S",),
    "lost_dispatch_after_s": ("DAGQ_LOST_DISPATCH_AFTER_S",),
    "empty_queue_repair_after_s": ("DAGQ_EMPTY_QUEUE_REPAIR_AFTER_S",),
    "activate_repair_after_s": ("DAGQ_ACTIVATE_REPAIR_AFTER_S",),
    "inline_output_bytes": ("DAGQ_INLINE_OUTPUT_BYTES",),
    "state_inline_bytes": ("DAGQ_STATE_INLINE_BYTES",),
    "workflow_slice_s": ("DAGQ_WORKFLOW_SLICE_S",),
    "state_cache_mb": ("DAGQ_STATE_CACHE_MB",),
    "sweep_schedule": ("DAGQ_SWEEP_SCHEDULE",),
    "worker_lost_after_s": ("DAGQ_WORKER_LOST_AFTER_S",),
    "sweep_overdue_after_s": ("DAGQ_SWEEP_OVERDUE_AFTER_S",),
    "event_stuck_after_s": ("DAGQ_EVENT_STUCK_AFTER_S",),
    "clock_skew_s": ("DAGQ_CLOCK_SKEW_S",),
    "dead_letter_window_s": ("DAGQ_DEAD_LETTER_WINDOW_S",),
    "worker_forget_after_s": ("DAGQ_WORKER_FORGET_AFTER_S",),
    "prices": ("DAGQ_PRICES",),
    "gpu_vm_sku": ("DAGQ_GPU_VM_SKU",),
    "max_definition_bytes": ("DAGQ_MAX_DEFINITION_BYTES",),
    "max_expansion_width": ("DAGQ_MAX_EXPANSION_WIDTH",),
    "notify_allow_private": ("DAGQ_NOTIFY_ALLOW_PRIVATE",),
    "notify_allow_http": ("DAGQ_NOTIFY_ALLOW_HTTP",),
    "notify_retry_s": ("DAGQ_NOTIFY_RETRY_S",),
    "eventgrid_endpoint": ("DAGQ_EVENTGRID_ENDPOINT",),
    "public_url": ("DAGQ_PUBLIC_URL",),
}
"""Every setting's variables, as they were spelled out one by one before ``env_prefix``."""

STORAGE = "UseDevelopmentStorage=true"


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    for names in ENV_NAMES.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)


def _other_value(name: str) -> str:
    """A valid value of setting ``name`` that is not its default."""
    default = Settings.model_fields[name].default
    special = {"prefix": "zq", "partitions": "3", "rbac_enforce": "true", "lease_s": "45"}
    if name in special:
        return special[name]
    if isinstance(default, bool):
        return str(not default).lower()
    if isinstance(default, int | float):
        return str(default + 1)
    return "a-value"


def test_every_setting_is_read_from_the_variables_it_always_was() -> None:
    assert Settings.env_names() == ENV_NAMES


@pytest.mark.parametrize("name", [n for n in ENV_NAMES if not n.endswith("_uri")])
def test_each_variable_sets_its_setting(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ENV_NAMES[name]:
        _clear(monkeypatch)
        if name != "storage_connection_string":
            monkeypatch.setenv("DAGQ_STORAGE", STORAGE)
        value = _other_value(name)
        monkeypatch.setenv(variable, value)
        read = getattr(Settings(), name)
        assert str(read).lower() == value.lower() or read == type(read)(value), variable


def test_the_service_uris_address_storage(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    for service in ("blob", "queue", "table"):
        monkeypatch.setenv(f"DAGQ_STORAGE__{service}ServiceUri", f"https://x.{service}.example")
    settings = Settings()
    assert settings.service_uri("queue") == "https://x.queue.example"


def test_a_field_name_without_the_prefix_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("DAGQ_STORAGE", STORAGE)
    monkeypatch.setenv("LEASE_S", "45")
    assert Settings().lease_s == Settings.model_fields["lease_s"].default


def test_values_named_as_their_variables_win_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("DAGQ_STORAGE", STORAGE)
    monkeypatch.setenv("DAGQ_PREFIX", "fromenv")
    given = Settings.model_validate({"DAGQ_PREFIX": "given", "DAGQ_LEASE_S": "45"})
    assert (given.prefix, given.lease_s) == ("given", 45)
    assert Settings(prefix="byname").prefix == "byname"
    assert Settings().prefix == "fromenv"
