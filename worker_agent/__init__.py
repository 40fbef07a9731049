"""dagq's worker agent: pulls task queues, runs each task's command, heartbeats, reports.

Run it with ``python -m worker_agent`` or ``dagq-worker`` (``main``); see docs/worker.md. The
face: ``main``, ``Agent`` (the task slots of one worker process) and ``WorkerSettings`` (the
worker's own settings, ``DAGQ_WORKER_*``). They load on first use (``shared.lazy``), so that
importing one module of the package (``dagq-worker --help`` imports ``cli`` and ``config``) does
not load the agent and the storage adapters with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.lazy import lazy_face

if TYPE_CHECKING:
    from worker_agent.agent import Agent as Agent
    from worker_agent.cli import main as main
    from worker_agent.config import WorkerSettings as WorkerSettings

__all__, __getattr__ = lazy_face(__name__, __file__)
