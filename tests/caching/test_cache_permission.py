"""A result cache the app may not use (its role on {prefix}-cache missing, as it was in infra/
before issue 28): every run still completes (a cache failure is a miss), and the failure is not
silent: counted in the pass's stats record, noted in the registry, and shown by dagq doctor as
an error naming the container, the 403 and the fix."""

from __future__ import annotations

import json
import logging

import pytest

from shared.coordinator import Coordinator
from shared.ops import doctor_checks
from shared.ops.doctor_facts import Facts
from shared.states import WorkflowStatus
from shared.storage.memory import MemoryStorage
from shared.storage.rbac.guard import guarded
from shared.storage.rbac.model import deployed_model
from shared.storage.tolerated import TOLERATED
from tests.caching.memory_runs import NAMES, pipeline, ran, worker
from tests.coordinator.helpers import FakeClock, drive, fast_options, load, submit
from tests.ops.facts import LIMITS


async def test_a_cache_the_app_may_not_use_is_a_miss_counted_and_shown(
    memory_storage: MemoryStorage, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    TOLERATED.reset()
    no_cache_role = deployed_model().without("appCacheContributor")
    app = guarded(memory_storage, "app", NAMES, model=no_cache_role)
    coordinator = Coordinator(app, NAMES, fast_options(), clock=clock)
    wf = pipeline()
    caplog.set_level(logging.INFO, logger="dagq")
    for wid in ("run1", "run2"):
        w = worker(memory_storage, clock)
        await submit(memory_storage, wf, wid, clock())

        async def done(wid: str = wid) -> bool:
            return (await load(memory_storage, wf, wid)).status.is_terminal

        await drive(app, NAMES, w, done, clock=clock, coordinator=coordinator)
        assert (await load(memory_storage, wf, wid)).status is WorkflowStatus.COMPLETED
        assert ran(w) == ["prep", "train", "evaluate"]  # no hit: it ran again
    assert memory_storage.cache.entries == {}

    passes = [
        json.loads(r.getMessage()) for r in caplog.records if "coordinator_pass" in r.getMessage()
    ]
    tolerated = [p["tolerated"] for p in passes if p["tolerated"]]
    assert any("cache record" in t for t in tolerated), tolerated
    assert any("cache look-up" in t for t in tolerated), tolerated

    notes = await memory_storage.registry.failures()
    assert {(n.source, n.kind, n.detail) for n in notes} >= {
        ("app", "cache record", "403 AuthorizationPermissionMismatch"),
        ("app", "cache look-up", "403 AuthorizationPermissionMismatch"),
    }
    # A note carries its writer's clock (the real one here), as doctor's own does.
    facts = Facts(now=max(n.at for n in notes), limits=LIMITS, names=NAMES, failures=notes)
    [finding, *_] = [f for f in doctor_checks.tolerated_failures(facts) if "write" in f.title]
    assert finding.severity == "error"
    assert finding.title == "app cannot write mem-cache: 403 AuthorizationPermissionMismatch"
    assert "infra/modules/identity.bicep" in finding.fix
