"""Result caching (opt-in per task with ``cache:``): the key of a task's result, the cache
entry's format, and the coordinator's look-up and record steps.

``key.py`` and ``entry.py`` are pure (no storage, no clock); the coordinator's look-up and record
steps around them are ``shared.coordinator.results``. docs/workflow-format.md says exactly what
is and is not in a key.
"""
