"""Query parameters: one parser for every endpoint.

Each endpoint declares its parameters as a pydantic model (``Query``); ``parse_query`` reads them
from the request and answers a 400 that names the parameter, says what it must be and quotes what
was sent. Numbers are ASCII only: ``str.isdigit()`` takes ``²``, ``①`` or ``١٢`` (and ``int()``
then raises, or reads ``١٢`` as 12), so a number here is what a client means by one — ASCII digits,
finite, within its range. An absent or empty parameter takes its default.

The handlers import this module when they run, not at the app's start-up (it imports pydantic).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal, TypeVar

import azure.functions as func
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from shared.api.problems import bad_request
from shared.limits import (
    MAX_COST_WORKFLOWS,
    MAX_COUNTER,
    MAX_LIST_LIMIT,
    MAX_NAME_FILTER,
    MAX_PURGE_PAGE,
    MAX_TOKEN_CHARS,
)
from shared.states import WorkflowStatus

MAX_SINCE_S = 366 * 86400.0
"""Longest period a cost report covers."""
PURGEABLE = ("completed", "failed", "cancelled")
"""The statuses a purge takes."""
MAX_OFFSET = 1 << 48
"""Largest byte offset of a log read (far past any log: --max-log-bytes bounds them)."""

_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
_DECIMAL = re.compile(
    r"[+-]?(?:[0-9]{1,400}(?:\.[0-9]{0,400})?|\.[0-9]{1,400})(?:[eE][+-]?[0-9]{1,4})?"
)


def _integer(raw: object) -> object:
    if isinstance(raw, str):
        if not _INTEGER.fullmatch(raw.strip()):
            raise ValueError("not an integer in ASCII digits")
        return int(raw.strip())
    return raw


def _decimal(raw: object) -> object:
    if isinstance(raw, str):
        if not _DECIMAL.fullmatch(raw.strip()):
            raise ValueError("not a number in ASCII digits")
        number = float(raw.strip())
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        return number
    return raw


_FLAGS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _flag(raw: object) -> object:
    if isinstance(raw, str):
        value = _FLAGS.get(raw.strip().lower())
        if value is None:
            raise ValueError("not true or false")
        return value
    return raw


Integer = Annotated[int, BeforeValidator(_integer)]
"""An integer written in ASCII digits (add ``Field(ge=..., le=...)`` for its range)."""
Number = Annotated[float, BeforeValidator(_decimal)]
"""A finite decimal number written in ASCII (``1.5``, ``2e3``)."""
Flag = Annotated[bool, BeforeValidator(_flag)]
"""``true``/``1``/``yes`` or ``false``/``0``/``no`` (any case)."""


class Query(BaseModel):
    """The query parameters of one endpoint: each field's ``description`` completes "must be
    ..." in the 400 that refuses it; a field's alias is its name in the URL."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)


Q = TypeVar("Q", bound=Query)


def parse_query(req: func.HttpRequest, model: type[Q]) -> Q:
    """``model``'s parameters from ``req``'s query string; a 400 naming the first bad one."""
    sent: dict[str, str] = {}
    for name, declared in model.model_fields.items():
        raw = req.params.get(declared.alias or name)
        if raw is not None and raw != "":
            sent[name] = raw
    try:
        return model.model_validate(sent)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else ""
        info = model.model_fields.get(name)
        shown = (info.alias or name) if info is not None else name
        what = info.description if info is not None and info.description else "valid"
        if name not in sent:
            raise bad_request(f"query parameter {shown!r} is required: {what}") from None
        raise bad_request(
            f"query parameter {shown!r} must be {what}, not {sent[name][:40]!r}"
        ) from None


def _token(raw: str) -> str:
    if len(raw) > MAX_TOKEN_CHARS or not raw.isascii() or not raw.isprintable():
        raise ValueError("not a continuation token")
    return raw


Token = Annotated[str, AfterValidator(_token)]
"""A continuation token as a listing gave it (printable ASCII, bounded); decoded later."""
CONTINUATION_HELP = (
    "a continuation token: pass back the 'next' value of the previous page unchanged"
)


# -- the endpoints' parameters ---------------------------------------------------------------


class GetQuery(Query):
    """``GET /api/workflows/{id}``."""

    tasks: Flag = Field(True, description="true or false")


class SubmitQuery(Query):
    """``POST /api/workflows``: result caching overrides (the ``id`` is checked as an id)."""

    no_cache: Flag = Field(False, description="true or false")
    refresh: str = Field("", description="task names, comma-separated")


def _status(raw: object) -> object:
    return raw.strip().lower() if isinstance(raw, str) else raw


def _name_filter(name: str) -> str:
    # Control characters cannot be in a name; a lone surrogate is not text at all.
    if len(name) > MAX_NAME_FILTER or any(
        ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in name
    ):
        raise ValueError("not a name filter")
    return name


class ListQuery(Query):
    """``GET /api/workflows``."""

    status: Annotated[WorkflowStatus | None, BeforeValidator(_status)] = Field(
        None, description="one of " + ", ".join(s.value for s in WorkflowStatus)
    )
    name: Annotated[str | None, AfterValidator(_name_filter)] = Field(
        None, description=f"a name prefix of at most {MAX_NAME_FILTER} printable characters"
    )
    limit: Integer = Field(
        50, ge=1, le=MAX_LIST_LIMIT, description=f"an integer from 1 to {MAX_LIST_LIMIT}"
    )
    next: Token | None = Field(None, description=CONTINUATION_HELP)
    continuation: Token | None = Field(None, description=CONTINUATION_HELP)


class DoctorQuery(Query):
    """``GET /api/doctor``: ``id`` is then checked as a workflow id."""

    id: str | None = Field(None, description="a workflow id")


def _statuses(raw: object) -> object:
    if not isinstance(raw, str):
        return raw
    parts = [part.strip().lower() for part in raw.split(",")]
    if not all(part in PURGEABLE for part in parts):
        raise ValueError("not purgeable statuses")
    return [WorkflowStatus(part) for part in parts]


class PurgeQuery(Query):
    """``POST /api/purge``."""

    older_than_s: Number = Field(
        ge=0,
        description="the age in seconds (>= 0) since a workflow finished beyond which it is"
        " purged, e.g. 2592000 for 30 days",
    )
    status: Annotated[list[WorkflowStatus], BeforeValidator(_statuses)] = Field(
        default_factory=lambda: [WorkflowStatus(s) for s in PURGEABLE],
        description=f"one or more of {', '.join(PURGEABLE)}, comma-separated (other statuses"
        " cannot be purged)",
    )
    dry_run: Flag = Field(False, description="true or false")
    limit: Integer = Field(
        100, ge=1, le=MAX_PURGE_PAGE, description=f"an integer from 1 to {MAX_PURGE_PAGE}"
    )
    next: Token | None = Field(None, description=CONTINUATION_HELP)


class CostQuery(Query):
    """``GET /api/cost``."""

    since_s: Number = Field(
        7 * 86400, gt=0, le=MAX_SINCE_S, description=f"seconds from 1 to {MAX_SINCE_S:.0f}"
    )
    by: Literal["queue", "name"] = Field("queue", description="queue or name")
    limit: Integer = Field(
        MAX_COST_WORKFLOWS, ge=1, le=MAX_COST_WORKFLOWS,
        description=f"an integer from 1 to {MAX_COST_WORKFLOWS}",
    )  # fmt: skip


class LogQuery(Query):
    """``GET /api/workflows/{id}/tasks/{task}/log``."""

    attempt: Integer | None = Field(
        None, ge=1, le=MAX_COUNTER, description=f"an integer from 1 to {MAX_COUNTER}"
    )
    offset: Integer = Field(
        0, ge=0, le=MAX_OFFSET, description=f"an integer from 0 to {MAX_OFFSET}"
    )
