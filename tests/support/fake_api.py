"""A tiny fake of the dagq HTTP API on 127.0.0.1, for the client's error handling only.

Integration tests use the real stack; this fake answers canned responses so the unit tests can
produce the odd cases (problem details, non-JSON bodies, 401 without a body) on demand.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Canned:
    status: int
    body: bytes = b""
    content_type: str = "application/json"


@dataclass
class FakeApi:
    url: str
    routes: dict[tuple[str, str], list[Canned]] = field(default_factory=dict)
    """Answers per route, in order; the last one repeats."""
    requests: list[dict[str, Any]] = field(default_factory=list)

    def on(
        self,
        method: str,
        path: str,
        status: int,
        body: Any = None,
        *,
        content_type: str | None = None,
    ) -> None:
        if isinstance(body, bytes | str):
            raw = body.encode() if isinstance(body, str) else body
            ctype = content_type or "text/plain"
        else:
            raw = b"" if body is None else json.dumps(body).encode()
            ctype = content_type or (
                "application/problem+json" if status >= 400 else "application/json"
            )
        self.routes.setdefault((method, path), []).append(Canned(status, raw, ctype))


@contextmanager
def fake_api() -> Iterator[FakeApi]:
    api = FakeApi(url="")

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            path, _, query = self.path.partition("?")
            api.requests.append(
                {
                    "method": self.command,
                    "path": path,
                    "query": query,
                    "headers": dict(self.headers.items()),
                    "body": body,
                }
            )
            answers = api.routes.get((self.command, path), [])
            canned = (
                (answers.pop(0) if len(answers) > 1 else answers[0])
                if answers
                else Canned(
                    404,
                    json.dumps(
                        {"title": "Not Found", "status": 404, "detail": f"no fake for {path}"}
                    ).encode(),
                    "application/problem+json",
                )
            )
            self.send_response(canned.status)
            self.send_header("content-type", canned.content_type)
            self.send_header("content-length", str(len(canned.body)))
            self.end_headers()
            self.wfile.write(canned.body)

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()


def workflow_body(**fields: Any) -> dict[str, Any]:
    """A complete ``GET /api/workflows/{id}`` answer (``shared.views.Workflow``)."""
    body: dict[str, Any] = {
        "id": "wf",
        "name": "demo",
        "status": "running",
        "run": 1,
        "created_at": 1000.0,
        "updated_at": 1000.0,
        "finished_at": None,
        "total": 0,
        "counts": {},
        "cancel_requested": False,
        "error": None,
    }
    return body | fields


def task_body(**fields: Any) -> dict[str, Any]:
    """A complete task entry of a workflow answer (``shared.views.TaskSummary``)."""
    body: dict[str, Any] = {
        "state": "pending",
        "attempt": 0,
        "queue": "cpu",
        "queued_at": None,
        "started_at": None,
        "finished_at": None,
        "exit_code": None,
        "error": None,
        "worker": None,
    }
    return body | fields
