"""The Azure adapters' one retry of lost connections (the rule: ``shared.storage.repeat``).

Every port method of the Azure adapters is decorated with ``repeated``: a call that fails at the
connection level (``connection_lost``) is made again, with ``is_repeat()`` true so that the
method settles a 409 or 412 the earlier try may have caused. The SDKs' own retry policies are
told not to retry connection errors (``SDK_RETRY``): they cannot tell the adapter that a request
was sent twice, and the Tables SDK never repeats a POST or a MERGE (an insert, a batch, a merge),
so a pooled connection closed by the server failed an index insert outright (issue #36). They
still retry throttling and server errors (5xx) as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from azure.core.exceptions import ServiceRequestError, ServiceResponseError

from shared.storage.repeat import with_repeats

P = ParamSpec("P")
T = TypeVar("T")

SDK_RETRY: dict[str, Any] = {"retry_connect": 0, "retry_read": 0}
"""Keyword arguments for every service client: connection errors are ``repeated``'s to retry."""


def connection_lost(error: BaseException) -> bool:
    """The request failed at the connection: refused, reset, closed before the answer (aiohttp's
    "Server disconnected"), or the answer did not arrive in time. It may have taken effect."""
    return isinstance(error, ServiceRequestError | ServiceResponseError)


def repeated(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """``method`` (a port operation), repeated after a lost connection."""
    what = method.__qualname__

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        return await with_repeats(lambda: method(*args, **kwargs), lost=connection_lost, what=what)

    wrapper.__dagq_repeated__ = True  # type: ignore[attr-defined]
    return wrapper
