"""Who may talk to the local stack: this machine's own clients, never a web page of another site.

The local host (``devtools.localhost``: ``make up``, ``make demo KEEP=1``, the tests) serves the
API with real workers behind it and no key; its HTTP trigger asks :func:`refusal` first. A
browser visiting any web site can send requests to ``http://127.0.0.1:PORT``: a "simple"
cross-site POST (``text/plain``, which the API accepts as a definition) needs no preflight, and a
site that rebinds its DNS name to 127.0.0.1 even reads the answers. So every request must pass,
before the app sees it:

- **Host is loopback** (``127.0.0.1``, ``localhost``, ``[::1]``, with any port): a rebound name
  such as ``attacker.example`` is refused (DNS rebinding);
- **Origin is absent or this very origin** (``http://`` + the Host header): browsers send Origin
  with every cross-origin request that is not a plain GET, and the CLI, curl and the tests send
  none; ``null`` (sandboxed frames, files) is refused;
- **Sec-Fetch-Site, when present, is ``same-origin`` or ``none``** for a request that changes
  something (any method but GET, HEAD, OPTIONS): the browser's own word that a page of another
  site (or a sibling subdomain) started it.

A refused request gets 403 with a problem+json body that says why, and reaches no function.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_TRUSTED_FETCH_SITES = frozenset({"same-origin", "none"})


def _loopback(host_header: str) -> bool:
    try:
        name = urlsplit("//" + host_header).hostname
    except ValueError:
        return False
    return name is not None and name.lower() in LOOPBACK_HOSTS


def refusal(method: str, headers: Mapping[str, str]) -> str | None:
    """Why a request with these headers may not reach the local app, or None if it may.
    ``headers`` must look names up case-insensitively (aiohttp's and httpx's do)."""
    host = headers.get("Host", "")
    if not _loopback(host):
        return (
            f"Host {host[:100]!r} is not a loopback address: the local stack answers only "
            "requests for 127.0.0.1 or localhost (a DNS-rebound name is refused)"
        )
    origin = headers.get("Origin")
    if origin is not None and origin.lower().rstrip("/") != f"http://{host.lower()}":
        return (
            f"Origin {origin[:100]!r} is another site: the local stack answers only its own "
            "pages (the dashboard) and clients that send no Origin (the CLI, curl)"
        )
    site = headers.get("Sec-Fetch-Site")
    if method.upper() not in SAFE_METHODS and site is not None and site not in _TRUSTED_FETCH_SITES:
        return f"a {site} request may not change anything on the local stack"
    return None


def problem_body(detail: str) -> bytes:
    """The problem+json document of a refused request."""
    return json.dumps(
        {"type": "about:blank", "title": "Forbidden", "status": 403, "detail": detail}
    ).encode()
