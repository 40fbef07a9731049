"""Test session fixtures: one Azurite for the whole session, a fresh resource prefix per test.

Tests that need storage take the ``storage_env`` or ``settings`` fixture (or ``azurite``), or a
storage fixture of tests/support/storage_fixtures.py. Azurite
is a real dependency: when it cannot start, those tests fail; they are never skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from devtools.azurite import Azurite
from shared.settings import Settings
from shared.storage.tolerated import TOLERATED

# Nothing the suite runs may contact an address other than loopback (tests/support/netguard.py),
# nor make a storage call its identity's roles in infra/ do not allow (tests/support/rbac.py).
# The fixtures more than one folder takes are registered here, once, and each name means one thing
# everywhere (tests/test_layout.py): ``storage`` (the contract's, over memory and Azurite),
# ``memory_storage`` and ``clock``, ``azure_storage`` (tests/support/storage_fixtures.py), and
# ``stack``, the real stack of the CLI's and the dashboard's tests (tests/support/stack.py).
pytest_plugins = [
    "tests.support.netguard",
    "tests.support.rbac",
    "tests.support.storage_fixtures",
    "tests.support.stack",
]


@pytest.fixture(autouse=True)
def _fresh_tolerated_counts() -> None:
    """Each test starts with no tolerated failures counted in this process (the count is
    process-wide, as one app or worker process's is: shared/storage/tolerated.py)."""
    TOLERATED.reset()


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    """A running in-memory Azurite on free ports for the whole test session."""
    with Azurite() as server:
        yield server


@pytest.fixture
def prefix() -> str:
    """A resource prefix no other test uses: tests never see each other's queues, tables, blobs."""
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture
def storage_env(azurite: Azurite, prefix: str) -> dict[str, str]:
    """Environment variables that point dagq (app, coordinator, worker subprocesses) at Azurite."""
    return {"DAGQ_STORAGE": azurite.connection_string, "DAGQ_PREFIX": prefix}


@pytest.fixture
def settings(storage_env: dict[str, str]) -> Settings:
    """Settings for this test's prefix on the session's Azurite."""
    return Settings.model_validate(storage_env)
