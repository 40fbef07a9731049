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

from shared.lazy import lazy_face

if TYPE_CHECKING:
    from shared.ops.doctor import report as report
    from shared.ops.doctor import summarize as summarize
    from shared.ops.doctor_checks import CHECKS as CHECKS
    from shared.ops.doctor_checks import diagnose as diagnose
    from shared.ops.doctor_facts import Facts as Facts
    from shared.ops.doctor_facts import gather as gather
    from shared.ops.purge import purge_many as purge_many
    from shared.ops.purge import purge_workflow as purge_workflow
    from shared.ops.workers import (
        list_workers as list_workers,
    )
    from shared.ops.workers import (
        worker_status as worker_status,
    )
    from shared.ops.workers import (
        worker_view as worker_view,
    )

__all__, __getattr__ = lazy_face(__name__, __file__)
