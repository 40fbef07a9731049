"""Operating a deployment: the worker registry's view, ``dagq doctor``'s checks, and purge.

Plain async functions over the storage ports and pure functions over gathered facts; the HTTP
shell (``shared.api.ops_http``) and the CLI (through the API: ``shared.client.ops``) use them.
The modules: ``workers`` (alive or lost), ``doctor`` (``doctor.doctor`` runs the whole check:
``doctor_facts.gather`` reads storage once, the pure checks of ``doctor_checks`` judge the facts,
``report`` sums them up), ``purge`` (one finished workflow, or many by age).

The names below load on first use (``shared.lazy``): they pull in the views (pydantic) and the
engine, which the Functions app must not import at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_names

if TYPE_CHECKING:
    from shared.ops.doctor import report, summarize
    from shared.ops.doctor_checks import CHECKS, diagnose
    from shared.ops.doctor_facts import Facts, gather
    from shared.ops.purge import purge_many, purge_workflow
    from shared.ops.workers import list_workers, worker_status, worker_view

__all__ = [
    "CHECKS",
    "Facts",
    "diagnose",
    "gather",
    "list_workers",
    "purge_many",
    "purge_workflow",
    "report",
    "summarize",
    "worker_status",
    "worker_view",
]

__getattr__ = lazy_names(
    __name__,
    {
        "shared.ops.doctor": ("report", "summarize"),
        "shared.ops.doctor_checks": ("CHECKS", "diagnose"),
        "shared.ops.doctor_facts": ("Facts", "gather"),
        "shared.ops.purge": ("purge_many", "purge_workflow"),
        "shared.ops.workers": ("list_workers", "worker_status", "worker_view"),
    },
)
