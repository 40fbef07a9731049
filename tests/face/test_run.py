"""``dagq.Run``: a submitted workflow as a Python object, against the canned fake API."""

from __future__ import annotations

import dagq
from tests.support.fake_api import fake_api, workflow_body


def test_a_run_submits_waits_and_reads_outputs() -> None:
    wf = dagq.Workflow("demo")
    wf.task("a", cmd="true")
    with fake_api() as api:
        api.on("POST", "/api/workflows", 201, {"id": "wf", "status": "running", "url": "u"})
        api.on("GET", "/api/workflows/wf", 200, workflow_body(status="completed"))
        api.on("GET", "/api/workflows/wf/tasks/a/output", 200, {"best": 0.9})
        with dagq.Client(api.url) as client:
            run = dagq.Run.submit(client, wf)
            assert run.id == "wf"
            assert run.wait(timeout_s=5).status == "completed"
            assert run.output("a") == {"best": 0.9}
    assert api.requests[0]["path"] == "/api/workflows"
    assert [r["path"] for r in api.requests[1:]] == [
        "/api/workflows/wf",
        "/api/workflows/wf/tasks/a/output",
    ]
