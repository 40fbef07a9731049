"""HTTP triggers: aiohttp serves every request on the function whose route template matches."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from devtools.localhost import origin
from devtools.localhost.app import Function

log = logging.getLogger("dagq.localhost")

MAX_REQUEST_BYTES = 100 * 1024 * 1024
"""The Functions host's request size limit (100 MB); the app applies its own, lower limits."""


@dataclass
class Route:
    function: Function
    methods: frozenset[str]
    pattern: re.Pattern[str]
    template: str


def compile_route(template: str) -> re.Pattern[str]:
    """A route template (``workflows/{id}/tasks/{task}``) as a regex over the raw path."""
    parts = []
    for segment in template.strip("/").split("/"):
        match = re.fullmatch(r"\{(\*?)([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?(\??)\}", segment)
        if match:
            star, name, _optional = match.groups()
            parts.append(f"(?P<{name}>.+)" if star else f"(?P<{name}>[^/]+)")
        else:
            parts.append(re.escape(segment))
    return re.compile("/".join(parts), re.IGNORECASE)


def build_routes(functions: list[Function]) -> list[Route]:
    routes = []
    for f in functions:
        if f.kind != "httpTrigger":
            continue
        template = f.trigger.get("route") or f.name
        methods = frozenset(m.upper() for m in f.trigger.get("methods") or ["GET", "POST"])
        routes.append(Route(f, methods, compile_route(template), template))
    # Literal segments win over parameters, as in ASP.NET routing: try the most specific first.
    routes.sort(key=lambda r: (-r.template.count("/"), r.template.count("{")))
    return routes


def http_app(routes: list[Route], route_prefix: str) -> web.Application:
    """An aiohttp application dispatching every request to the matching HTTP function."""
    import azure.functions as func

    prefix = "/" + route_prefix if route_prefix else ""

    async def dispatch(request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        raw = request.raw_path.split("?", 1)[0]
        refused = origin.refusal(request.method, request.headers)
        if refused is not None:  # a web page of another site, or a DNS-rebound name
            log.warning("%s %s refused: %s", request.method, raw, refused)
            body = origin.problem_body(refused)
            return web.Response(status=403, body=body, content_type="application/problem+json")
        if not raw.lower().startswith(prefix.lower() + "/"):
            return web.Response(status=404)
        rest = raw[len(prefix) + 1 :]
        allowed: set[str] = set()
        for route in routes:
            match = route.pattern.fullmatch(rest)
            if not match:
                continue
            if request.method not in route.methods:
                allowed |= route.methods
                continue
            req = func.HttpRequest(
                request.method,
                str(request.url),
                headers=dict(request.headers),
                params={k: v for k, v in request.query.items()},
                route_params={k: unquote(v) for k, v in match.groupdict().items()},
                body=await request.read(),
            )
            try:
                result = await route.function.invoke(req)
            except Exception:
                log.exception("function %s failed", route.function.name)
                return web.Response(status=500)
            response = _to_aiohttp(result)
            log.info(
                "%s %s -> %s (%s, %.0f ms)", request.method, raw, response.status,
                route.function.name, (time.monotonic() - started) * 1000,
            )  # fmt: skip
            return response
        if allowed:
            return web.Response(status=405, headers={"Allow": ", ".join(sorted(allowed))})
        return web.Response(status=404)

    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    # Every path reaches dispatch, also one whose decoded form has a newline (which ".*" would not
    # match, leaving aiohttp to answer a text/plain 404 the app never sees).
    app.router.add_route("*", r"/{tail:[\s\S]*}", dispatch)
    return app


def _to_aiohttp(result: Any) -> web.Response:
    import azure.functions as func

    if not isinstance(result, func.HttpResponse):
        log.error("an HTTP function returned %s instead of an HttpResponse", type(result).__name__)
        return web.Response(status=500)
    headers = dict(result.headers)
    if result.mimetype and not any(k.lower() == "content-type" for k in headers):
        headers["Content-Type"] = f"{result.mimetype}; charset={result.charset or 'utf-8'}"
    return web.Response(status=result.status_code, headers=headers, body=result.get_body())
