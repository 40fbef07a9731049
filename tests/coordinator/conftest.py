"""The coordinator tests' fixtures (tests/support/memory_fixtures.py): a fake clock and a storage
account in memory whose visibility timeouts and leases follow it."""

from __future__ import annotations

from tests.support.memory_fixtures import clock, storage

__all__ = ["clock", "storage"]
