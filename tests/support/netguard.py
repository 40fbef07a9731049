"""Pytest plugin: no test, and no process a test starts, contacts anything but loopback.

The guard itself is ``netguard_site/sitecustomize.py`` (an audit hook that refuses and records
non-loopback connections and lookups); this plugin installs it in the test process, makes every
Python subprocess (and every Python task of a worker) install it too, and fails the test during
which an offence was recorded, naming the process, the address and where the call came from.
``make test`` also runs the whole session in a network namespace with only loopback where the
machine allows it (``netns.py``): then no process at all, Python or not, can reach another address.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SITE_DIR = Path(__file__).resolve().parent / "netguard_site"
TASK_ENV = "DAGQ_WORKER_TASK_ENV"


def _load_guard() -> Any:
    """The guard module: the one this process loaded as ``sitecustomize`` when it inherited the
    guard (its hook is installed already), else a fresh load of it."""
    loaded = sys.modules.get("sitecustomize")
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").parent == SITE_DIR:
        return loaded
    spec = importlib.util.spec_from_file_location("dagq_netguard", SITE_DIR / "sitecustomize.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Offences:
    """The offences recorded so far, read incrementally from the report directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._seen: dict[str, int] = {}

    def take(self) -> list[dict[str, Any]]:
        """Offences recorded since the last call."""
        new: list[dict[str, Any]] = []
        for path in sorted(self.directory.glob("*.jsonl")):
            lines = path.read_text(encoding="utf-8").splitlines()
            start = self._seen.get(path.name, 0)
            new.extend(json.loads(line) for line in lines[start:] if line.strip())
            self._seen[path.name] = len(lines)
        return new


_OFFENCES: Offences | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _OFFENCES
    directory = Path(tempfile.mkdtemp(prefix="dagq-netguard-"))
    guard = _load_guard()
    os.environ[guard.ENV] = str(directory)
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(SITE_DIR) + (os.pathsep + path if path else "")
    # A worker hands its tasks only allowlisted variables: every worker the session starts
    # (in-process or not) passes the guard's on, so its Python tasks are guarded too.
    task_env = os.environ.get(TASK_ENV, "")
    os.environ[TASK_ENV] = " ".join(filter(None, (task_env, "PYTHONPATH", guard.ENV)))
    guard.install(str(directory))
    _OFFENCES = Offences(directory)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OFFENCES is not None:
        shutil.rmtree(_OFFENCES.directory, ignore_errors=True)


def describe(offences: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"- pid {o['pid']} ({' '.join(o['argv'])[:200]}): {o['event']} to {o['host']}\n"
        + "".join(o["stack"][-3:])
        for o in offences
    )


@pytest.fixture
def netguard() -> Offences:
    """The session's offence log, for tests that provoke an offence and check it was caught."""
    assert _OFFENCES is not None
    return _OFFENCES


@pytest.fixture(autouse=True)
def _only_loopback() -> Iterator[None]:
    assert _OFFENCES is not None
    earlier = _OFFENCES.take()  # from a process outliving an earlier test: report it here too
    yield
    offences = earlier + _OFFENCES.take()
    if offences:
        pytest.fail(
            "contacted an address other than loopback (refused by the test network guard):\n"
            + describe(offences),
            pytrace=False,
        )
