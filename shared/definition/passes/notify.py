"""Pass 8, notify: the workflow's webhooks (``notify:``, issue 29) — each URL's form, its events
without repeats, at most ``MAX_NOTIFY_TARGETS`` — located at ``notify[i].<field>``; the build
pass asks for the ``NotifyTarget``s. Also a submit's ``--notify URL`` (``with_notify``).

Only the URL's *form* is checked here (the core does no I/O): whether its host resolves to an
address the deployment may call (SSRF) is checked at delivery, by ``shared.notify.guard``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from urllib.parse import urlsplit

from shared.definition.compilation import Compilation
from shared.definition.passes.values import CONTROL_RE
from shared.definition.workflow import CompiledWorkflow, NotifyTarget
from shared.errors import DefinitionError, Issue
from shared.limits import MAX_NOTIFY_TARGETS, MAX_NOTIFY_URL


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a webhook URL, or None: an absolute ``https://`` (or ``http://``)
    URL with a host, no credentials, no spaces or control characters."""
    if not url:
        return "the URL is empty"
    if len(url) > MAX_NOTIFY_URL:
        return f"the URL is longer than {MAX_NOTIFY_URL} characters"
    if CONTROL_RE.search(url) or any(ch.isspace() for ch in url):
        return "the URL must not contain spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return f"not a URL: {exc}"
    if parts.scheme.lower() not in ("https", "http"):
        return f"a webhook URL starts with https:// (got {url[:40]!r})"
    if not parts.hostname:
        return "the URL names no host"
    if parts.username is not None or parts.password is not None:
        return "the URL must not hold credentials (user:password@): use `secret` to sign"
    return None


def check_notify(c: Compilation) -> None:
    """Pass 8: the workflow's ``notify:`` list (its issues reported with the others)."""
    notify_targets(c)


def notify_targets(c: Compilation) -> tuple[NotifyTarget, ...]:
    """The webhooks of ``notify:``; problems go to ``c.issues``."""
    targets = []
    specs = c.spec.notify
    if len(specs) > MAX_NOTIFY_TARGETS:
        c.issues.add("notify", f"at most {MAX_NOTIFY_TARGETS} webhooks, got {len(specs)}")
    for i, spec in enumerate(specs):
        problem = url_problem(spec.url)
        if problem:
            c.issues.add(f"notify[{i}].url", problem)
        if len(set(spec.events)) != len(spec.events):
            c.issues.add(f"notify[{i}].events", "an event is listed twice")
        if spec.secret is not None and CONTROL_RE.search(spec.secret):
            c.issues.add(f"notify[{i}].secret", "the secret must not contain control characters")
        events = tuple(dict.fromkeys(spec.events))
        targets.append(NotifyTarget(spec.url, events, spec.secret, spec.format))
    return tuple(targets)


def with_notify(
    wf: CompiledWorkflow, urls: Sequence[str], *, source: str = "<input>"
) -> CompiledWorkflow:
    """``wf`` with a submit's ``--notify URL``s added (default events, JSON, unsigned) after its
    own ``notify:`` list; a URL already listed is not added twice. Raises DefinitionError
    naming each bad URL (``--notify[i]``)."""
    if not urls:
        return wf
    issues = [
        Issue(f"--notify[{i}]", problem)
        for i, url in enumerate(urls)
        if (problem := url_problem(url)) is not None
    ]
    known = {t.url for t in wf.notify}
    added = [NotifyTarget(url) for url in dict.fromkeys(urls) if url not in known]
    if len(wf.notify) + len(added) > MAX_NOTIFY_TARGETS:
        issues.append(
            Issue("--notify", f"at most {MAX_NOTIFY_TARGETS} webhooks per workflow in all")
        )
    if issues:
        raise DefinitionError(issues, source)
    return dataclasses.replace(wf, notify=wf.notify + tuple(added))
