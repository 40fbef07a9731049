"""The notifications' errors, on the kernel's base class (``shared.errors.DagqError``): only the
notify room raises and catches them, so they live in it."""

from __future__ import annotations

from shared.errors import DagqError


class RefusedTarget(DagqError, OSError):
    """A webhook target the deployment's settings forbid (the reason says which rule)."""
