"""Fixtures of the API tests: the app under the local host, on the session's Azurite.

Hosts are module-scoped (starting one costs an import of the app, ~1 s), each with its own resource
prefix so modules never see each other's workflows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.azurite import Azurite
from devtools.testing.api_host import HostProcess, start_host
from shared.settings import Settings


@pytest.fixture(scope="module")
def host_env(azurite: Azurite) -> dict[str, str]:
    """Storage environment of this module's host (a prefix of its own)."""
    return {
        "DAGQ_STORAGE": azurite.connection_string,
        "DAGQ_PREFIX": "a" + uuid.uuid4().hex[:12],
    }


@pytest.fixture(scope="module")
def host_settings(host_env: dict[str, str]) -> Settings:
    return Settings.model_validate(host_env)


@pytest.fixture(scope="module")
def api_host(
    host_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    """The Functions app served by the local host for this module."""
    log_path = Path(tmp_path_factory.mktemp("host")) / "host.log"
    host = start_host(host_env, log_path)
    try:
        yield host
    finally:
        code = host.stop()
        assert code == 0, f"the local host exited with {code}:\n{host.log()}"


@pytest.fixture(scope="module")
def api_only_host(
    host_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostProcess]:
    """The app's HTTP functions alone: no queue or timer trigger runs, so nothing consumes the
    events the API sends (their count is exact) and no workflow moves on its own."""
    log_path = Path(tmp_path_factory.mktemp("host")) / "host.log"
    host = start_host(host_env, log_path, extra_args=("--no-queues", "--no-timers"))
    try:
        yield host
    finally:
        code = host.stop()
        assert code == 0, f"the local host exited with {code}:\n{host.log()}"
