"""Workflow parameters of a submit as query parameters: ``POST /api/workflows?param=NAME=VALUE``,
repeated once per parameter (the same form ``dagq submit --param`` and ``Client.submit(params=)``
send). Each value is text; the compiler reads it as the parameter's declared type and reports a
name that is not declared (``shared.definition.passes.params``).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import azure.functions as func

from shared.api.problems import bad_request
from shared.limits import MAX_PARAM_CHARS, MAX_PARAMS

_MAX_NAME_CHARS = 128


def repeated(req: func.HttpRequest, name: str) -> list[str]:
    """Every value of query parameter ``name``, in order (``req.params`` keeps only one of a
    repeated parameter, so the URL's query string is read)."""
    query = urlsplit(req.url).query
    if query:
        return [value for key, value in parse_qsl(query, keep_blank_values=True) if key == name]
    single = req.params.get(name)
    return [] if single is None else [single]


def param_values(req: func.HttpRequest) -> dict[str, str] | None:
    """``{NAME: VALUE}`` of the submit's ``param=NAME=VALUE`` (None when there is none); a 400
    for one without ``=``, a name given twice, or too many."""
    raw = repeated(req, "param")
    if not raw:
        return None
    if len(raw) > MAX_PARAMS:
        raise bad_request(f"param is given {len(raw)} times; the limit is {MAX_PARAMS}")
    values: dict[str, str] = {}
    for item in raw:
        name, equals, value = item.partition("=")
        name = name.strip()
        shown = item if len(item) <= 40 else item[:37] + "..."
        if not equals or not name or len(name) > _MAX_NAME_CHARS:
            raise bad_request(f"param must be NAME=VALUE (param=lr=0.01), not {shown!r}")
        if name in values:
            raise bad_request(f"param {name!r} is given twice: give each parameter once")
        if len(value) > MAX_PARAM_CHARS:
            raise bad_request(
                f"param {name!r} is {len(value):,} characters; the limit is {MAX_PARAM_CHARS:,}"
            )
        values[name] = value
    return values
