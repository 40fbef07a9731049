"""The worker's errors, on the kernel's base class (``shared.errors.DagqError``): only the worker
raises and catches them, so they live in its room."""

from __future__ import annotations

from shared.errors import DagqError


class AttemptError(DagqError):
    """The worker cannot run or finish an attempt for a reason that is the task's, not the worker's
    (bad cwd, invalid output, a parent's output missing): the attempt fails with reason 'error'."""


class StartError(DagqError):
    """The task's command could not be started (missing cwd, invalid environment...)."""
