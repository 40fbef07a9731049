"""HTTP handlers of ``/api/schedules`` (issue 29; ``shared.api.schedules`` does the work).

``POST /api/schedules?name=N&cron=C[&timezone=Z][&param=K=V ...][&notify=URL ...]
[&concurrency=allow|forbid|replace][&catch_up=N]`` with the workflow definition as its body (as
``POST /api/workflows``) creates one; ``GET /api/schedules`` lists them, ``GET`` and ``DELETE
/api/schedules/{name}`` show and delete one, ``POST .../pause`` and ``.../resume`` pause and
resume it. Same conventions as ``shared.api.http``: everything is checked before storage is
touched, every error is a problem+json body.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import quote, urlsplit

import azure.functions as func

from shared.api.context import CONTEXT
from shared.api.http import _handler, json_response
from shared.api.notify_query import notify_params, repeated_param
from shared.api.problems import bad_request
from shared.api.request import parse_definition_body, route_param
from shared.definition.schedule import CONCURRENCY, MAX_CATCH_UP, MAX_SCHEDULE_PARAMS
from shared.storage.schedules import ScheduleSpec


def _api_base(req: func.HttpRequest) -> str:
    """``scheme://host/{routePrefix}`` of a ``/schedules`` request."""
    parts = urlsplit(req.url)
    path = parts.path
    cut = path.find("/schedules")
    if cut >= 0:
        path = path[:cut]
    return f"{parts.scheme}://{parts.netloc}{path.rstrip('/')}"


def _urls(req: func.HttpRequest) -> dict[str, object]:
    base = _api_base(req)
    return {
        "url_for": lambda name: f"{base}/schedules/{quote(name, safe='')}",
        "workflow_url": lambda wid: f"{base}/workflows/{wid}",
    }


def _param_values(req: func.HttpRequest) -> dict[str, str]:
    """``?param=NAME=VALUE`` (repeatable)."""
    values: dict[str, str] = {}
    pairs = repeated_param(req, "param")
    if len(pairs) > MAX_SCHEDULE_PARAMS:
        raise bad_request(f"param is given more than {MAX_SCHEDULE_PARAMS} times")
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise bad_request(f"query parameter 'param' must be NAME=VALUE, not {pair[:40]!r}")
        if name in values:
            raise bad_request(f"param {name[:40]!r} is given twice")
        values[name] = value
    return values


def _catch_up(req: func.HttpRequest) -> int:
    raw = (req.params.get("catch_up") or "1").strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 4 or not 1 <= int(raw) <= MAX_CATCH_UP:
        raise bad_request(
            f"query parameter 'catch_up' must be a whole number from 1 to {MAX_CATCH_UP},"
            f" not {raw[:40]!r}"
        )
    return int(raw)


def schedule_spec(req: func.HttpRequest, definition: str) -> ScheduleSpec:
    """The schedule a create request asks for (its form; ``check_spec`` checks the rest)."""
    name = req.params.get("name") or ""
    cron = req.params.get("cron") or ""
    if not name:
        raise bad_request("query parameter 'name' is required: the schedule's name")
    if not cron:
        raise bad_request("query parameter 'cron' is required: five fields, such as '0 2 * * *'")
    concurrency = req.params.get("concurrency") or "allow"
    if concurrency not in CONCURRENCY:
        raise bad_request(
            f"query parameter 'concurrency' must be one of {', '.join(CONCURRENCY)},"
            f" not {concurrency[:40]!r}"
        )
    return ScheduleSpec(
        name=name, cron=cron, definition=definition,
        timezone=req.params.get("timezone") or "UTC", params=_param_values(req),
        notify=list(notify_params(req)), concurrency=concurrency,  # type: ignore[arg-type]
        catch_up=_catch_up(req),
    )  # fmt: skip


async def _create(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import schedules

    settings = CONTEXT.settings
    text, fmt = parse_definition_body(req, settings.max_definition_bytes)
    spec = schedule_spec(req, text)
    await asyncio.to_thread(
        schedules.check_spec, spec, fmt, max_expansion_width=settings.max_expansion_width
    )
    storage = await CONTEXT.storage()
    now = time.time()
    record, created = await schedules.create(storage, spec, now=now)
    body = await schedules.view(storage, record, now=now, **_urls(req))  # type: ignore[arg-type]
    return json_response(body, 201 if created else 200, headers={"Location": body.url})


async def _list(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import schedules

    storage = await CONTEXT.storage()
    body = await schedules.list_all(storage, now=time.time(), **_urls(req))  # type: ignore[arg-type]
    return json_response(body)


def _name(req: func.HttpRequest) -> str:
    from shared.api import schedules

    name = route_param(req, "name")
    schedules.check_name(name)
    return name


async def _show(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api import schedules

    name = _name(req)
    storage = await CONTEXT.storage()
    body = await schedules.show(storage, name, now=time.time(), **_urls(req))  # type: ignore[arg-type]
    return json_response(body)


async def _set_paused(req: func.HttpRequest, paused: bool) -> func.HttpResponse:
    from shared.api import schedules

    name = _name(req)
    storage = await CONTEXT.storage()
    now = time.time()
    record = await schedules.set_paused(storage, name, paused, now=now)
    body = await schedules.view(storage, record, now=now, **_urls(req))  # type: ignore[arg-type]
    return json_response(body)


async def _pause(req: func.HttpRequest) -> func.HttpResponse:
    return await _set_paused(req, True)


async def _resume(req: func.HttpRequest) -> func.HttpResponse:
    return await _set_paused(req, False)


async def _delete(req: func.HttpRequest) -> func.HttpResponse:
    from shared.api.schedule_sweep import finish_and_delete
    from shared.signing import signer_of

    name = _name(req)
    storage = await CONTEXT.storage()
    settings = CONTEXT.settings
    deleted = await finish_and_delete(
        storage, name, now=time.time(), partitions=settings.partitions,
        signer=signer_of(settings.signing_key), max_expansion_width=settings.max_expansion_width,
        names=settings.names,
    )  # fmt: skip
    return json_response(deleted)


create_schedule = _handler(_create)
list_schedules = _handler(_list)
get_schedule = _handler(_show)
pause_schedule = _handler(_pause)
resume_schedule = _handler(_resume)
delete_schedule = _handler(_delete)
