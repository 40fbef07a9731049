"""Pass 1, values: the workflow's own fields (name, default queue, env names, at least one task).

Also the checks of one final task's values (cmd, env, cwd, queue, after templating), which the
expansion pass runs on each task it makes: they need the rendered values, and checking them there
keeps one final task's checks in one place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from shared.definition.compilation import Compilation, Expansion, Written, environment_bytes
from shared.limits import MAX_CMD_BYTES, MAX_CWD_CHARS, MAX_ENV_BYTES, MAX_WORKFLOW_NAME
from shared.names import queue_name_problem

ENV_NAME_RE = re.compile(r"^[^=\x00]+$")
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def check_workflow_fields(c: Compilation) -> None:
    """The workflow's name, default queue and env names, and that it has tasks."""
    spec, issues = c.spec, c.issues
    if not spec.name.strip():
        issues.add("name", "the workflow name must not be empty")
    elif len(spec.name) > MAX_WORKFLOW_NAME:
        issues.add("name", f"the workflow name is longer than {MAX_WORKFLOW_NAME} characters")
    elif CONTROL_RE.search(spec.name):
        issues.add("name", "the workflow name must not contain control characters")
    problem = queue_name_problem(spec.default_queue)
    if problem:
        issues.add("default_queue", problem)
    check_env_names(c, spec.env, "env", None)
    if not spec.tasks:
        issues.add("tasks", "the workflow has no tasks: add at least one")


def check_env_names(c: Compilation, env: Mapping[str, str], loc: str, task: str | None) -> None:
    """Environment names hold no ``=`` or NUL, values no NUL."""
    for key, value in env.items():
        if not ENV_NAME_RE.match(key):
            c.issues.add(
                f"{loc}.{key}",
                f"invalid environment variable name {key!r} (no '=' or NUL)",
                task,
            )
        if "\x00" in value:
            c.issues.add(f"{loc}.{key}", "environment values must not contain NUL characters", task)


def check_task_values(c: Compilation, w: Written, e: Expansion, label: str) -> None:
    """Checks of one final task's values (after templating); ``label`` prefixes each message."""
    loc, name, add = w.loc, w.spec.name, c.issues.add
    cmd = e.cmd
    if len(cmd) * 4 > MAX_CMD_BYTES and len(cmd.encode("utf-8", "replace")) > MAX_CMD_BYTES:
        add(
            f"{loc}.kwargs.cmd",
            f"{label}cmd is {len(cmd.encode('utf-8', 'replace')):,} bytes; the limit is"
            f" {MAX_CMD_BYTES:,} (put long scripts in a file and run that)",
            name,
        )
    if "\x00" in cmd:
        add(f"{loc}.kwargs.cmd", f"{label}cmd must not contain NUL characters", name)
    if not cmd.strip():
        add(f"{loc}.kwargs.cmd", f"{label}cmd is empty", name)
    if e.env:
        env_bytes = environment_bytes(e.env)
        if env_bytes > MAX_ENV_BYTES:
            add(
                f"{loc}.kwargs.env",
                f"{label}the environment (workflow env + task env) is {env_bytes:,}"
                f" characters; the limit is {MAX_ENV_BYTES:,}",
                name,
            )
    if e.cwd is not None:
        if not e.cwd or CONTROL_RE.search(e.cwd):
            add(
                f"{loc}.kwargs.cwd",
                f"{label}cwd must be a non-empty path without control characters, got {e.cwd!r}",
                name,
            )
        elif len(e.cwd) > MAX_CWD_CHARS:
            add(f"{loc}.kwargs.cwd", f"{label}cwd is longer than {MAX_CWD_CHARS}", name)
    # An invalid default_queue is reported once, not for every task that inherits it.
    if w.spec.queue is not None:
        problem = queue_name_problem(e.queue)
        if problem:
            add(f"{loc}.queue", f"{label}{problem}", name)
