"""The dashboard: a single-page app served by the Functions app itself.

``GET /api/ui`` answers the page and ``GET /api/ui/{path}`` its static assets, from the ``ui``
folder packaged beside this module (no separate web server, no build step). Both routes are
anonymous: they hold no data. The page reads everything through the API with the caller's
credentials (a function key it keeps in the browser, or the Entra session cookie), including
``GET /api/workflows/{id}/graph``, the DAG's structure, which is served here because only the
dashboard needs it (its shape is ``shared.views.Graph``).

Only files that exist in the ``ui`` folder when the app starts are served, looked up by their exact
relative name: a request path is never joined onto the file system, so nothing outside the folder
(``../``, absolute paths, symlinks added later) can be read.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import azure.functions as func

from shared.api.http import Handler, guarded, json_response
from shared.errors import NotFoundError

if TYPE_CHECKING:
    from shared.definition.workflow import CompiledWorkflow
    from shared.views import Graph

STATIC_DIR = Path(__file__).with_name("ui")
"""The dashboard's files (package data)."""

CONTENT_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".txt": "text/plain",
}
"""What is served, by suffix; any other file in the folder is not."""

SECURITY_HEADERS = {
    # Everything the page loads comes from the app itself: no inline script, no third party.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

BASE_MARKER = "%BASE%"
"""Stands for the dashboard's folder URL in the page's asset links: they resolve against the URL
the page was actually served from (route prefix, proxies), not a path compiled in. (Not a
``<base href>``: that would turn the page's ``#/...`` links into navigations.)"""


@dataclass(frozen=True)
class Asset:
    """One servable file, read once."""

    body: bytes
    content_type: str
    etag: str


@functools.cache
def assets() -> dict[str, Asset]:
    """Relative POSIX name -> asset, for every servable file under ``STATIC_DIR``."""
    found: dict[str, Asset] = {}
    for path in sorted(STATIC_DIR.rglob("*")):
        content_type = CONTENT_TYPES.get(path.suffix)
        if content_type is None or not path.is_file():
            continue
        body = path.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        found[path.relative_to(STATIC_DIR).as_posix()] = Asset(body, content_type, etag)
    return found


def _asset_response(req: func.HttpRequest, asset: Asset, body: bytes | None = None) -> Any:
    headers = {**SECURITY_HEADERS, "ETag": asset.etag, "Cache-Control": "no-cache"}
    if body is None and req.headers.get("if-none-match") == asset.etag:
        return func.HttpResponse(status_code=304, headers=headers)
    return func.HttpResponse(
        asset.body if body is None else body,
        status_code=200,
        headers=headers,
        mimetype=asset.content_type,
        charset="utf-8",
    )


def page_base(url: str) -> str:
    """The folder the page's relative URLs resolve against: ``.../ui/`` of the request path."""
    path = urlsplit(url).path
    cut = path.lower().rfind("/ui")
    return path[: cut + 3] + "/" if cut >= 0 else "/api/ui/"


async def _page(req: func.HttpRequest) -> func.HttpResponse:
    index = assets()["index.html"]
    base = quote(page_base(req.url), safe="/-._~")
    body = index.body.replace(BASE_MARKER.encode(), base.encode())
    response: func.HttpResponse = _asset_response(req, index, body)
    return response


async def _asset(req: func.HttpRequest) -> func.HttpResponse:
    name = (req.route_params.get("path") or "").strip("/")
    if name in ("", "index.html"):
        return await _page(req)
    asset = assets().get(name)
    if asset is None:
        raise NotFoundError(f"the dashboard has no file {name[:100]!r}")
    response: func.HttpResponse = _asset_response(req, asset)
    return response


# -- the DAG's structure ---------------------------------------------------------------------------


def graph_view(workflow_id: str, wf: CompiledWorkflow) -> Graph:
    """``GET /api/workflows/{id}/graph``: every task's name, queue, foreach group and parents
    (as indices into ``tasks``). It never changes, so clients cache it."""
    from shared.views import Graph, GraphTask

    tasks = [
        GraphTask(name=t.name, queue=t.queue, group=t.group, parents=list(t.parents))
        for t in wf.tasks
    ]
    return Graph(id=workflow_id, name=wf.name, tasks=tasks)


async def _graph(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api.context import CONTEXT
    from shared.names import check_workflow_id
    from shared.readback.workflow_reads import read_definition, read_workflow

    workflow_id = req.route_params.get("id") or ""
    check_workflow_id(workflow_id)
    storage = await CONTEXT.storage()
    wf = await read_definition(storage, workflow_id)
    if any(t.expand is not None for t in wf.tasks):
        # foreach_from tasks expand at run time: the graph is the running workflow's, and it
        # grows, so it is not cached.
        running, _state = await read_workflow(storage, workflow_id)
        return json_response(
            graph_view(workflow_id, running), headers={"Cache-Control": "no-store"}
        )
    # A definition never changes: the browser keeps it for the whole session.
    cache = {"Cache-Control": "private, max-age=86400, immutable"}
    return json_response(graph_view(workflow_id, wf), headers=cache)


def _handler(operation: Handler) -> Handler:
    async def handle(req: func.HttpRequest) -> func.HttpResponse:
        return await guarded(req, operation)

    return handle


dashboard = _handler(_page)
dashboard_asset = _handler(_asset)
get_workflow_graph = _handler(_graph)
