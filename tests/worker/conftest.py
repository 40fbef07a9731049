"""Helpers for worker tests: real Azurite storage, task messages sent through the adapters,
events read back from the event queue, agents run in-process or as subprocesses."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from shared.names import ResourceNames
from shared.settings import Settings
from shared.storage import AzureStorage, ensure_resources, open_storage
from tests.worker.agents import FAST
from worker_agent.config import WorkerSettings


@pytest.fixture
async def storage(settings: Settings) -> AsyncIterator[AzureStorage]:
    async with open_storage(settings) as opened:
        await ensure_resources(opened)
        yield opened


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
