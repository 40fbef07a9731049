"""Pytest plugin: the whole suite runs under the deployment's permissions.

Azurite grants every identity everything; on Azure a call outside an identity's roles is a 403.
This plugin turns ``DAGQ_RBAC_ENFORCE`` on for the session, so every component a test starts
(the app under the local host, worker agents, the coordinator) checks each storage call against
infra/'s role assignments for its identity (``shared.storage.rbac``), and points
``DAGQ_RBAC_USAGE`` at a file of the session's, which every such process appends what it used
and what it was refused to. A test during which a refusal was recorded fails, naming identity,
operation and resource, even where the code tolerated the 403 ("running is always correct").
Tests that provoke refusals on purpose use a usage file (or log) of their own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.storage.rbac.usage import Use, read_uses

_USAGE: Path | None = None
_SEEN: set[Use] = set()


def pytest_configure(config: pytest.Config) -> None:
    global _USAGE
    _USAGE = Path(tempfile.mkdtemp(prefix="dagq-rbac-")) / "usage.jsonl"
    os.environ["DAGQ_RBAC_ENFORCE"] = "1"
    os.environ["DAGQ_RBAC_USAGE"] = str(_USAGE)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _USAGE is not None:
        shutil.rmtree(_USAGE.parent, ignore_errors=True)


def new_refusals() -> list[Use]:
    """Refusals recorded since the last call."""
    assert _USAGE is not None
    fresh = [use for use in read_uses(_USAGE) if use not in _SEEN]
    _SEEN.update(fresh)
    return [use for use in fresh if use.refused is not None]


@pytest.fixture(autouse=True)
def _within_granted_roles() -> Iterator[None]:
    earlier = new_refusals()  # from a process outliving an earlier test: report it here too
    yield
    refused = earlier + new_refusals()
    if refused:
        pytest.fail(
            "a storage call was refused by the deployment's permissions (infra/, as Azure would"
            " refuse it):\n" + "\n".join(f"- {use.refused} (from {use.caller})" for use in refused),
            pytrace=False,
        )
