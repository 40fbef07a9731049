"""Fixtures of the operations tests: the two-backend ``storage`` fixture of the storage contract
tests (memory fakes AND Azurite), and finished workflows to purge."""

from __future__ import annotations

from tests.ops.workflows import finished_workflow
from tests.support.contract_storage import storage

__all__ = ["finished_workflow", "storage"]
