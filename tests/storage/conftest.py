"""The storage contract tests' ``storage`` fixture (tests/support/contract_storage.py): the same
tests run against the in-memory fakes, Azurite, and Azurite behind a proxy that breaks
connections."""

from __future__ import annotations

from tests.support.contract_storage import storage

__all__ = ["storage"]
