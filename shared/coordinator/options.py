"""The coordinator's tunables. Those that are deployment settings take their defaults from
``shared.settings.Settings`` (one place per default); the rest are pacing details that tests and
benchmarks override."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from shared.settings import Settings


def _setting(name: str) -> Any:
    return Settings.model_fields[name].default


@dataclass(frozen=True)
class CoordinatorOptions:
    """How a coordinator paces itself. Defaults suit Azure Functions and the long-lived process."""

    lease_s: int = _setting("lease_s")
    """Lease duration (15-60 s)."""
    renew_every_s: float | None = None
    """How often a pass renews the lease (default: lease_s / 3)."""
    pass_budget_s: float = _setting("pass_budget_s")
    """How long one pass keeps draining the event queue."""
    event_visibility_s: int = _setting("event_visibility_s")
    """Visibility timeout of received events: well above the budget, so a pass finishes (flush and
    delete) before any of its events can be redelivered."""
    lost_dispatch_after_s: float = _setting("lost_dispatch_after_s")
    empty_queue_repair_after_s: float = _setting("empty_queue_repair_after_s")
    """A queued attempt on a queue seen holding no message is re-sent this long after its send."""
    activate_repair_after_s: float = _setting("activate_repair_after_s")
    inline_output_bytes: int = _setting("inline_output_bytes")
    """Largest inline output an event may bring into the state (larger ones are moved to blobs)."""
    state_inline_bytes: int = _setting("state_inline_bytes")
    """Most inline output bytes one workflow's state holds (beyond: moved to blobs)."""
    workflow_slice_s: float = _setting("workflow_slice_s")
    """Longest one pass spends loading a workflow and applying its events (dispatching what they
    made ready and flushing are never cut short: cutting them would only repeat them)."""
    state_cache_mb: int = _setting("state_cache_mb")
    """Memory the cached states may take (``WorkflowCache``'s estimate of their decoded size)."""
    cancel_grace_s: float = 600.0
    batch_size: int = 32
    """Messages per receive call (Azure's maximum is 32)."""
    receives_per_cycle: int = 2
    """Most receives issued concurrently per drain cycle (a deep queue earns them; a shallow one
    gets one). A cycle's events are applied together and each workflow is flushed once per cycle.
    More than 2 measured no faster on Azurite, whose receives slow down as the queue deepens."""
    prefetch_cycles: int = 2
    """Receive cycles run ahead of the drain on a deep queue (1 on a shallow one): what came back
    while a cycle was updated joins the next, so latency makes cycles larger, not more numerous."""
    send_concurrency: int = 32
    delete_concurrency: int = 32
    workflow_concurrency: int = 32
    """Workflows processed at once within a cycle (each: load, apply, dispatch, flush, project)."""
    max_flush_attempts: int = 4
    """Re-read and re-apply at most this many times on 412 before leaving the events unacked."""
    project_every_s: float = 1.0
    """Index rows of a busy workflow are written at most this often (and at once on a status
    change); the pass projects whatever is left before it ends."""
    max_dequeue_count: int = 5
    """An event whose application keeps raising an unexpected error is dead-lettered once it has
    been delivered this many times (a malformed event is dead-lettered at once)."""
    max_defer_deliveries: int = 30
    """An event for an attempt of a rerun the state has not applied yet (``engine.premature``:
    the coordinator crashed after dispatching the rerun, before flushing it) stays on the queue
    until the redelivered retry event is applied; after this many deliveries it is dead-lettered."""
    requeue_delay_s: float = 1.0
    """Delay of a trigger message re-sent to the event queue when this instance could not apply it
    (not the leader, lease lost), so it is not bounced in a hot loop."""
    keep_lease_idle_s: float = 2.0
    """Functions instances: keep the lease after a pass, renewed in the background, until no pass
    ran for this long (the next passes find a warm cache), then give it up for other instances."""
    lease_wait_s: float = 4.0
    """Functions instances: a trigger that finds the lease held elsewhere waits this long for it
    (longer than ``keep_lease_idle_s``, so an idle holder's lease comes free in time) before the
    event is handed back to the queue (a bounce)."""
    signing_key: str | None = field(default=_setting("signing_key"), repr=False)
    """The app's signing key (``DAGQ_SIGNING_KEY``): task messages are signed with it."""
    verify_keys: str | None = _setting("verify_keys")
    """Keys a control event's signature is checked against (``DAGQ_VERIFY_KEYS``, plus the
    signing key's own): with neither, control events are applied unsigned."""
    eventgrid_endpoint: str | None = _setting("eventgrid_endpoint")
    """An Event Grid topic (``DAGQ_EVENTGRID_ENDPOINT``): every workflow's ends are notified."""
    sweep_overdue_s: float = 10.0
    """The lease holder runs its partition's sweeps itself when none ran for this long, so they
    never starve while the timer's instance cannot get the lease."""

    @property
    def renew_interval_s(self) -> float:
        """How often the lease is renewed while a pass runs."""
        return self.renew_every_s if self.renew_every_s is not None else self.lease_s / 3

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> CoordinatorOptions:
        """The options of a deployment: every option that is a setting comes from ``settings``."""
        shared = {f.name for f in fields(cls)} & set(Settings.model_fields)
        return replace(cls(**{name: getattr(settings, name) for name in shared}), **overrides)
