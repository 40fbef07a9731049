"""Where the client finds the API and its key: arguments, environment, config file, default."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from shared.errors import ConfigError

DEFAULT_API_URL = "http://127.0.0.1:7071"
"""Where ``make up`` serves the API when nothing else is configured."""

KEY_HEADER = "x-functions-key"
"""Azure Functions reads a function key from this header."""


class ClientConfig(BaseModel):
    """Where the API is and how to authenticate."""

    model_config = ConfigDict(frozen=True)

    api_url: str = DEFAULT_API_URL
    api_key: str | None = None
    source: str = "default"
    """Where ``api_url`` came from (argument, environment, a config file path, default)."""

    @classmethod
    def resolve(
        cls,
        api_url: str | None = None,
        api_key: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        config_path: str | Path | None = None,
    ) -> ClientConfig:
        """Combine arguments, environment and config file in that order of precedence."""
        env = os.environ if env is None else env
        file_values, file_path = _read_config_file(config_path, env)
        url, source = api_url, "argument"
        if not url and env.get("DAGQ_API_URL"):
            url, source = env["DAGQ_API_URL"], "environment (DAGQ_API_URL)"
        if not url and file_values.get("api_url"):
            url, source = str(file_values["api_url"]), str(file_path)
        if not url:
            url, source = DEFAULT_API_URL, "default"
        key = api_key or env.get("DAGQ_API_KEY") or file_values.get("api_key") or None
        return cls(api_url=_normalise_url(url), api_key=key, source=source)


def config_file_path(env: Mapping[str, str] | None = None) -> Path:
    """The config file the client reads (it need not exist)."""
    env = os.environ if env is None else env
    if env.get("DAGQ_CONFIG"):
        return Path(env["DAGQ_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "dagq" / "config.toml"


def _read_config_file(
    path: str | Path | None, env: Mapping[str, str]
) -> tuple[dict[str, Any], Path]:
    chosen = Path(path).expanduser() if path else config_file_path(env)
    if not chosen.is_file():
        if path or env.get("DAGQ_CONFIG"):
            raise ConfigError(
                f"config file {chosen} does not exist (set by DAGQ_CONFIG or --config)"
            )
        return {}, chosen
    try:
        values = tomllib.loads(chosen.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read config file {chosen}: {exc}") from None
    unknown = sorted(set(values) - {"api_url", "api_key"})
    if unknown:
        raise ConfigError(
            f"config file {chosen}: unknown key(s) {', '.join(unknown)}; expected api_url, api_key"
        )
    return values, chosen


def _normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"API URL {url!r} must start with http:// or https://")
    # Accept both the host root and the /api route prefix.
    return url.removesuffix("/api")


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def check_credentials_travel_safely(api_url: str, *, key: bool, token: bool) -> None:
    """ConfigError when a function key or an Entra ID token would cross the network in clear
    text: over ``http://`` to a host that is not this machine's loopback."""
    parts = urlsplit(api_url)
    host = (parts.hostname or "").lower()
    loopback = host in LOOPBACK_HOSTS or host.startswith("127.")
    if parts.scheme == "http" and not loopback and (key or token):
        what = "the function key (DAGQ_API_KEY)" if key else "an Entra ID token (DAGQ_API_SCOPE)"
        raise ConfigError(
            f"refusing to send {what} in clear text to {api_url}: use an https:// URL"
            " (plain http:// is for a stack on this machine: 127.0.0.1, localhost)"
        )
