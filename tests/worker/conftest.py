"""The worker tests' own fixtures: the resource names and the worker settings of a test (their
storage, on the session's Azurite, is ``azure_storage``: tests/support/storage_fixtures.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.names import ResourceNames
from shared.settings import Settings
from tests.worker.agents import FAST
from worker_agent.config import WorkerSettings


@pytest.fixture
def names(settings: Settings) -> ResourceNames:
    return settings.names


@pytest.fixture
def worker_settings(tmp_path: Path) -> Callable[..., WorkerSettings]:
    """``worker_settings(queues=[...], **overrides)`` with fast defaults and a private work dir."""

    def make(**overrides: Any) -> WorkerSettings:
        values = {**FAST, "work_dir": tmp_path / "work", "queues": ["cpu"], **overrides}
        return WorkerSettings(**values)

    return make
