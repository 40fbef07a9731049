"""``?notify=URL`` of a submit (issue 29): repeatable, one webhook URL each.

The Functions host's ``req.params`` keeps one value per name, so the repeated values are read
from the request's URL (its query string); a request built with ``params`` only (no query in its
URL) gives that one value. Only the URLs' form and count are checked here (400 naming the bad
one); the compiler's ``with_notify`` adds them to the definition, and the SSRF checks run at
delivery.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import azure.functions as func

from shared.api.problems import bad_request
from shared.limits import MAX_NOTIFY_TARGETS


def repeated_param(req: func.HttpRequest, name: str) -> list[str]:
    """Every value of the query parameter ``name``, in order (empty values left out)."""
    query = urlsplit(req.url).query
    if query:
        values = [v for k, v in parse_qsl(query, keep_blank_values=True) if k == name]
    else:
        single = req.params.get(name)
        values = [single] if single is not None else []
    return [v for v in values if v != ""]


def notify_params(req: func.HttpRequest) -> tuple[str, ...]:
    """The webhook URLs of ``?notify=`` (each its own parameter; at most MAX_NOTIFY_TARGETS)."""
    from shared.definition.passes.notify import url_problem

    urls = repeated_param(req, "notify")
    if len(urls) > MAX_NOTIFY_TARGETS:
        raise bad_request(f"notify names more than {MAX_NOTIFY_TARGETS} webhooks")
    for url in urls:
        problem = url_problem(url)
        if problem:
            raise bad_request(f"query parameter 'notify' must be a webhook URL: {problem}")
    return tuple(urls)
