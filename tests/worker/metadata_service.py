"""A fake Azure instance metadata service (Spot evictions, scheduled events), for the worker's
stopping and preemption tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeMetadata:
    """Azure's instance metadata service, as much of it as the watcher reads."""

    def __init__(self, *, first_delay_s: float = 0.0, failures: int = 0) -> None:
        """``first_delay_s``: the first Scheduled Events request is answered this late (as when
        the service is being enabled); ``failures``: the first requests answer 503."""
        self.events: list[dict[str, Any]] = []
        self.requests: list[dict[str, str]] = []
        self.acks: list[Any] = []
        """Bodies POSTed to the Scheduled Events endpoint (acknowledgements)."""
        self.on_ack: Callable[[], None] = lambda: None
        """Called as an acknowledgement arrives (a test checks what has happened by then)."""
        self.first_delay = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.requests.append({"path": self.path, "metadata": self.headers["Metadata"]})
                if self.path.startswith("/metadata/instance/compute/name"):
                    self._answer(200, b"vm-7")
                    return
                count = sum(1 for r in fake.requests if "scheduledevents" in r["path"])
                if count == 1 and first_delay_s:
                    fake.first_delay.wait(first_delay_s)  # set() by close(): no hang at teardown
                if count <= failures:
                    self._answer(503, b"")
                    return
                body = json.dumps({"DocumentIncarnation": 1, "Events": fake.events}).encode()
                self._answer(200, body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                fake.requests.append({"path": self.path, "metadata": self.headers["Metadata"]})
                if "scheduledevents" not in self.path:
                    self._answer(404, b"")
                    return
                fake.on_ack()
                fake.acks.append(json.loads(self.rfile.read(length)))
                self._answer(200, b"")

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = (
            f"http://127.0.0.1:{self.server.server_port}/metadata/scheduledevents"
            "?api-version=2020-07-01"
        )
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.first_delay.set()
        self.server.shutdown()
        self.server.server_close()


def preempt(resource: str) -> dict[str, Any]:
    return {
        "EventId": f"evt-{resource}",
        "EventType": "Preempt",
        "ResourceType": "VirtualMachine",
        "Resources": [resource],
        "EventStatus": "Scheduled",
        "NotBefore": "",
    }
