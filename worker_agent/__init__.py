"""dagq's worker agent: pulls task queues, runs each task's command, heartbeats, reports.

Run it with ``python -m worker_agent`` or ``dagq-worker``; see docs/worker.md.
"""
