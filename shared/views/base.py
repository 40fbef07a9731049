"""The base of every response model, and how an answer is serialized."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class View(BaseModel):
    """Base of the response models."""

    model_config = ConfigDict(extra="allow", frozen=True, use_attribute_docstrings=True)


def dump(view: View) -> dict[str, Any]:
    """The JSON body of ``view``: defaults that were not set are left out."""
    return view.model_dump(mode="json", exclude_unset=True)


Epoch = float
"""Unix time in seconds."""
