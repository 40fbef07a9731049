"""HTTP handlers of a task's attempts and (live) log; ``shared.api.task_reads`` reads them.

Same conventions as ``shared.api.http``: parameters are checked before storage is touched, every
error is a problem+json body, and each handler is ``async (HttpRequest) -> HttpResponse``.

``GET .../tasks/{task}/log?attempt=N&offset=B`` answers ``text/plain``: the attempt's log from
byte ``B`` (at most 4 MiB), with headers saying which attempt it is (``X-Dagq-Attempt``), how
big the log is now (``X-Dagq-Log-Size``) and whether it may still grow (``X-Dagq-Log-Growing``:
``true`` while the attempt is queued or running). A follower reads on from
``offset + len(body)`` until ``X-Dagq-Log-Growing`` is ``false`` and nothing is left.
"""

from __future__ import annotations

import azure.functions as func

from shared.api.context import CONTEXT
from shared.api.http import _handler, json_response
from shared.api.request import route_param
from shared.names import check_task_name, check_workflow_id

ATTEMPT_HEADER = "X-Dagq-Attempt"
SIZE_HEADER = "X-Dagq-Log-Size"
GROWING_HEADER = "X-Dagq-Log-Growing"


def _ids(req: func.HttpRequest) -> tuple[str, str]:
    workflow_id, task = route_param(req, "id"), route_param(req, "task")
    check_workflow_id(workflow_id)
    check_task_name(task)
    return workflow_id, task


async def _get_task_log(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import reads

    workflow_id, task = _ids(req)
    from shared.api.query import LogQuery, parse_query

    query = parse_query(req, LogQuery)
    attempt, offset = query.attempt, query.offset
    storage = await CONTEXT.storage()
    piece = await reads.get_log(storage, workflow_id, task, attempt=attempt, offset=offset)
    headers = {
        ATTEMPT_HEADER: str(piece.attempt),
        SIZE_HEADER: str(piece.size),
        GROWING_HEADER: "true" if piece.growing else "false",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
    }
    return func.HttpResponse(
        piece.data, status_code=200, mimetype="text/plain", charset="utf-8", headers=headers
    )


async def _get_task_attempts(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import reads

    workflow_id, task = _ids(req)
    storage = await CONTEXT.storage()
    body = await reads.get_attempts(
        storage, workflow_id, task, outputs_container=CONTEXT.settings.names.outputs_container
    )
    return json_response(body)


get_task_log = _handler(_get_task_log)
get_task_attempts = _handler(_get_task_attempts)
