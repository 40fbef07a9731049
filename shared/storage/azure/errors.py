"""The Azure SDK's errors turned into dagq's (``shared.errors``), for every blob adapter."""

from __future__ import annotations

from typing import NoReturn

from azure.core.exceptions import ResourceNotFoundError

from shared.errors import ConfigError, NotFoundError


def raise_missing(error: ResourceNotFoundError, container: str, what: str) -> NoReturn:
    """Turn a 404 into dagq's error: a missing container is a deployment problem, not a missing
    workflow."""
    if getattr(error, "error_code", None) == "ContainerNotFound":
        raise ConfigError(
            f"blob container {container!r} does not exist: deploy the infrastructure for this "
            "prefix, or run ensure_resources (dagq's local setup does)"
        ) from error
    raise NotFoundError(f"{what} not found (container {container!r})") from error
