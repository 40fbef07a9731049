"""The dagq Azure Functions app (Python v2 programming model): the list of its functions.

Each function is a thin declaration that delegates to ``shared.api``; the logic lives there and is
tested without the Functions host. Importing this module must stay fast and must not touch storage
(Flex Consumption allows 30 s for start-up): storage clients are created on the first invocation.

App settings read here, at import time:

- ``DAGQ_PREFIX`` (default ``dagq``) and ``DAGQ_PARTITIONS`` (default 1): one queue trigger per
  partition, ``coordinator`` on ``{prefix}-events`` and ``coordinator_p{n}`` on
  ``{prefix}-events-p{n}`` (``shared.names.ResourceNames``), so a deployment names its resources
  once.
- ``DAGQ_API_AUTH_LEVEL`` (default ``function``): the HTTP auth level — ``function``, ``admin`` or
  ``anonymous``. ``/api/health``, ``/api/openapi.json`` and the dashboard's page and assets
  (``/api/ui``, which hold no data: the page calls the API with the user's key) are always
  anonymous.

And by the host, through binding expressions: ``%DAGQ_SWEEP_SCHEDULE%`` (the timer's NCRONTAB
schedule, seconds first) and the connection ``DAGQ_STORAGE`` (connection string, or
``DAGQ_STORAGE__accountName``/``__queueServiceUri`` with a managed identity).
"""

from __future__ import annotations

import os

import azure.functions as func

from shared.api import cost_http as cost
from shared.api import dashboard, notify_trigger, schedule_http, task_http, triggers
from shared.api import http as api
from shared.api import ops_http as ops
from shared.deployment import shape_from_env
from shared.names import ResourceNames


def _auth_level() -> func.AuthLevel:
    value = (os.environ.get("DAGQ_API_AUTH_LEVEL") or "function").strip().lower()
    try:
        return func.AuthLevel(value)
    except ValueError:
        raise ValueError(
            f"DAGQ_API_AUTH_LEVEL={value!r} is not an auth level: use function, admin or anonymous"
        ) from None


SHAPE = shape_from_env(os.environ)
NAMES = ResourceNames(SHAPE.prefix)
PARTITIONS = SHAPE.partitions
AUTH_LEVEL = _auth_level()

app = func.FunctionApp(http_auth_level=AUTH_LEVEL)


# -- HTTP API (route prefix "api", host.json) ------------------------------------------------------


@app.function_name("submit_workflow")
@app.route(route="workflows", methods=["POST"])
async def submit_workflow(req: func.HttpRequest) -> func.HttpResponse:
    return await api.submit_workflow(req)


@app.function_name("list_workflows")
@app.route(route="workflows", methods=["GET"])
async def list_workflows(req: func.HttpRequest) -> func.HttpResponse:
    return await api.list_workflows(req)


@app.function_name("get_workflow")
@app.route(route="workflows/{id}", methods=["GET"])
async def get_workflow(req: func.HttpRequest) -> func.HttpResponse:
    return await api.get_workflow(req)


@app.function_name("get_task")
@app.route(route="workflows/{id}/tasks/{task}", methods=["GET"])
async def get_task(req: func.HttpRequest) -> func.HttpResponse:
    return await api.get_task(req)


@app.function_name("get_task_log")
@app.route(route="workflows/{id}/tasks/{task}/log", methods=["GET"])
async def get_task_log(req: func.HttpRequest) -> func.HttpResponse:
    return await task_http.get_task_log(req)


@app.function_name("get_task_attempts")
@app.route(route="workflows/{id}/tasks/{task}/attempts", methods=["GET"])
async def get_task_attempts(req: func.HttpRequest) -> func.HttpResponse:
    return await task_http.get_task_attempts(req)


@app.function_name("get_task_output")
@app.route(route="workflows/{id}/tasks/{task}/output", methods=["GET"])
async def get_task_output(req: func.HttpRequest) -> func.HttpResponse:
    return await api.get_task_output(req)


@app.function_name("cancel_workflow")
@app.route(route="workflows/{id}/cancel", methods=["POST"])
async def cancel_workflow(req: func.HttpRequest) -> func.HttpResponse:
    return await api.cancel_workflow(req)


@app.function_name("retry_workflow")
@app.route(route="workflows/{id}/retry", methods=["POST"])
async def retry_workflow(req: func.HttpRequest) -> func.HttpResponse:
    return await api.retry_workflow(req)


@app.function_name("list_workers")
@app.route(route="workers", methods=["GET"])
async def list_workers(req: func.HttpRequest) -> func.HttpResponse:
    return await ops.list_workers(req)


@app.function_name("doctor")
@app.route(route="doctor", methods=["GET"])
async def doctor(req: func.HttpRequest) -> func.HttpResponse:
    return await ops.run_doctor(req)


@app.function_name("delete_workflow")
@app.route(route="workflows/{id}", methods=["DELETE"])
async def delete_workflow(req: func.HttpRequest) -> func.HttpResponse:
    return await ops.delete_workflow(req)


@app.function_name("purge_workflows")
@app.route(route="purge", methods=["POST"])
async def purge_workflows(req: func.HttpRequest) -> func.HttpResponse:
    return await ops.purge_workflows(req)


@app.function_name("health")
@app.route(route="health", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
async def health(req: func.HttpRequest) -> func.HttpResponse:
    return await api.health(req)


@app.function_name("openapi")
@app.route(route="openapi.json", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
async def openapi(req: func.HttpRequest) -> func.HttpResponse:
    return await api.openapi(req)


# -- cost (shared/api/cost_http.py, docs/cost.md) -------------------------------------------------


@app.function_name("get_workflow_cost")
@app.route(route="workflows/{id}/cost", methods=["GET"])
async def get_workflow_cost(req: func.HttpRequest) -> func.HttpResponse:
    return await cost.workflow_cost(req)


@app.function_name("get_cost")
@app.route(route="cost", methods=["GET"])
async def get_cost(req: func.HttpRequest) -> func.HttpResponse:
    return await cost.period_cost(req)


# -- schedules (shared/api/schedule_http.py, docs/api.md "Schedules") --------------------------


@app.function_name("create_schedule")
@app.route(route="schedules", methods=["POST"])
async def create_schedule(req: func.HttpRequest) -> func.HttpResponse:
    return await schedule_http.create_schedule(req)


@app.function_name("list_schedules")
@app.route(route="schedules", methods=["GET"])
async def list_schedules(req: func.HttpRequest) -> func.HttpResponse:
    return await schedule_http.list_schedules(req)


@app.function_name("get_schedule")
@app.route(route="schedules/{name}", methods=["GET"])
async def get_schedule(req: func.HttpRequest) -> func.HttpResponse:
    return await schedule_http.get_schedule(req)


@app.function_name("delete_schedule")
@app.route(route="schedules/{name}", methods=["DELETE"])
async def delete_schedule(req: func.HttpRequest) -> func.HttpResponse:
    return await schedule_http.delete_schedule(req)


@app.function_name("pause_schedule")
@app.route(route="schedules/{name}/pause", methods=["POST"])
async def pause_schedule(req: func.HttpRequest) -> func.HttpResponse:
    return await schedule_http.pause_schedule(req)


@app.function_name("resume_schedule")
@app.route(route="schedules/{name}/resume", methods=["POST"])
async def resume_schedule(req: func.HttpRequest) -> func.HttpResponse:
    return await schedule_http.resume_schedule(req)


# -- the dashboard (shared/api/dashboard.py, docs/dashboard.md) -----------------------------------


@app.function_name("get_workflow_graph")
@app.route(route="workflows/{id}/graph", methods=["GET"])
async def get_workflow_graph(req: func.HttpRequest) -> func.HttpResponse:
    return await dashboard.get_workflow_graph(req)


@app.function_name("dashboard")
@app.route(route="ui", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
async def dashboard_page(req: func.HttpRequest) -> func.HttpResponse:
    return await dashboard.dashboard(req)


@app.function_name("dashboard_asset")
@app.route(route="ui/{*path}", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
async def dashboard_asset(req: func.HttpRequest) -> func.HttpResponse:
    return await dashboard.dashboard_asset(req)


# -- the coordinator -------------------------------------------------------------------------------


def _coordinator(partition: int) -> None:
    """Declare partition ``partition``'s queue trigger (``coordinator`` for partition 0, the name
    of the single-partition app; ``coordinator_p{n}`` for the others)."""

    @app.function_name("coordinator" if partition == 0 else f"coordinator_p{partition}")
    @app.queue_trigger(
        arg_name="msg",
        queue_name=NAMES.partition_event_queue(partition),
        connection="DAGQ_STORAGE",
    )
    async def coordinator(msg: func.QueueMessage) -> None:
        await triggers.on_event(msg, partition)


for _partition in range(PARTITIONS):
    _coordinator(_partition)


# -- notifications (shared/api/notify_trigger.py, docs/notifications.md) ------------------------


@app.function_name("notify")
@app.queue_trigger(arg_name="msg", queue_name=NAMES.notify_queue, connection="DAGQ_STORAGE")
async def notify(msg: func.QueueMessage) -> None:
    await notify_trigger.on_notify(msg)


@app.function_name("sweeps")
@app.timer_trigger(arg_name="timer", schedule="%DAGQ_SWEEP_SCHEDULE%", use_monitor=False)
async def sweeps(timer: func.TimerRequest) -> None:
    await triggers.on_sweep(timer)
