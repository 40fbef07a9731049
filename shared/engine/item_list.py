"""The list a ``foreach_from`` task expands over (kept in ``RuntimeState.lists``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ItemList:
    """The list a ``foreach_from`` task expands over, captured when its source parent completed:
    the items, or why the output cannot be expanded (the task fails with it when it is due)."""

    attempt: int
    """The source's attempt whose output this is (a later completion replaces the capture)."""
    items: tuple[Any, ...] = ()
    """Scalars, or flat objects of scalars (validated)."""
    error: str | None = None
