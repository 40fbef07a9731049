"""Timer triggers: NCRONTAB schedules (seconds first) or ``hh:mm:ss`` intervals, one execution at
a time."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from datetime import UTC, datetime

from devtools.localhost.app import Function
from devtools.localhost.config import HostError, parse_timespan, resolve
from devtools.localhost.waits import sleep_unless

log = logging.getLogger("dagq.localhost")


class TimerSchedule:
    """Next occurrences of an NCRONTAB expression (seconds first) or an hh:mm:ss interval."""

    def __init__(self, expression: str, start: float) -> None:
        self.expression = expression
        self.interval: float | None = None
        if re.fullmatch(r"(?:\d+\.)?\d+:\d+:\d+", expression.strip()):
            self.interval = parse_timespan(expression)
            self._next = start + self.interval
            return
        from croniter import croniter

        if len(expression.split()) != 6:
            raise HostError(
                f"timer schedule {expression!r}: use six NCRONTAB fields, seconds first"
                " ('*/5 * * * * *')"
            )
        try:
            self._cron = croniter(
                expression, datetime.fromtimestamp(start, UTC), second_at_beginning=True
            )
        except (ValueError, KeyError) as exc:
            raise HostError(f"invalid timer schedule {expression!r}: {exc}") from None

    def next_after(self, now: float) -> float:
        """The first occurrence after ``now`` (occurrences missed meanwhile are skipped)."""
        if self.interval is not None:
            while self._next <= now:
                self._next += self.interval
            return self._next
        while True:
            value = float(self._cron.get_next(float))
            if value > now:
                return value


class TimerRunner:
    """Fires one timer-triggered function on its schedule, never two executions at once."""

    def __init__(self, function: Function) -> None:
        self.function = function
        expression = resolve(str(function.trigger["schedule"]), f"function {function.name}")
        self.schedule = TimerSchedule(expression, time.time())
        self.run_on_startup = bool(function.trigger.get("runOnStartup"))

    async def run(self, stopping: asyncio.Event) -> None:
        if self.run_on_startup:
            await self._fire(past_due=False)
        due = self.schedule.next_after(time.time())
        while not stopping.is_set():
            await sleep_unless(stopping, max(0.0, due - time.time()))
            if stopping.is_set():
                return
            late = time.time() - due
            await self._fire(past_due=late > 1.0)
            due = self.schedule.next_after(time.time())

    async def _fire(self, *, past_due: bool) -> None:
        from azure.functions.timer import TimerRequest

        try:
            await self.function.invoke(TimerRequest(past_due=past_due))
        except Exception:
            log.exception("timer function %s failed", self.function.name)
