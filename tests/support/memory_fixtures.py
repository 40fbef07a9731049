"""Fixtures over the in-memory storage, which the coordinator's and the result cache's tests take:
a fake clock and a storage account whose visibility timeouts and leases follow it."""

from __future__ import annotations

import pytest

from shared.storage.memory import MemoryStorage, memory_storage
from tests.coordinator.helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def storage(clock: FakeClock) -> MemoryStorage:
    return memory_storage("mem", clock=clock)
