"""HTTP handlers of the operations endpoints (workers, doctor, purge); ``shared.ops`` works.

Same conventions as ``shared.api.http``: parameters are checked before storage is touched, every
error is a problem+json body, and each handler is ``async (HttpRequest) -> HttpResponse``.
"""

from __future__ import annotations

import time

import azure.functions as func

from shared.api.context import CONTEXT
from shared.api.http import _handler, json_response


async def _workers(req: func.HttpRequest) -> func.HttpResponse:
    from shared.ops.workers import list_workers

    settings = CONTEXT.settings
    storage = await CONTEXT.storage()
    view = await list_workers(
        storage,
        now=time.time(),
        lost_after_s=settings.worker_lost_after_s,
        forget_after_s=settings.worker_forget_after_s,
    )
    return json_response(view.model_dump(mode="json"))


list_workers = _handler(_workers)
