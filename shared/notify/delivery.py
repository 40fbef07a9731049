"""Delivering one notification from the notify queue (the ``notify`` function's work).

Decode (a malformed or unsigned message is dead-lettered), read the workflow, ``confirm`` that
the stored state bears the notification out, build the report and the body of the target's
format, sign it, POST it. A failed POST (no answer, 5xx, 408, 429) is sent again later as a new
message carrying its ``tries`` and ``first_at``, invisible for a backoff that doubles from
``base_delay_s`` up to ``max_delay_s``; once the next try would fall past ``bound_s`` after the
first, the notification is dead-lettered with the last reason (the deployment's dead-letter
store, where ``dagq doctor`` shows it). A refused target (SSRF rules) or a permanent client
error (other 4xx) is dead-lettered at once. Returning normally lets the host delete the
message; raising (storage trouble) makes the host deliver it again: at least once, end to end.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import ValidationError

from shared.cost.model import workflow_cost
from shared.cost.prices import PriceTable
from shared.definition.workflow import CompiledWorkflow
from shared.engine.state import RuntimeState
from shared.errors import CodecError, MessageError, NotFoundError
from shared.limits import NOTIFY_DELIVERY_BOUND_S, NOTIFY_TIMEOUT_S
from shared.messages import NotifyMessage, encode
from shared.names import ResourceNames
from shared.notify import bodies
from shared.notify.errors import RefusedTarget
from shared.notify.guard import Resolve, TargetRules, system_resolve
from shared.notify.post import Answer, post_eventgrid, post_webhook
from shared.notify.report import Report, build_report, confirm
from shared.readback.workflow_reads import read_workflow
from shared.settings import Settings
from shared.signing import Signer, Verifier
from shared.storage.ports import Storage

log = logging.getLogger("dagq.notify")

Outcome = Literal["delivered", "retrying", "dead", "dropped"]


@dataclass(frozen=True)
class DeliveryOptions:
    """How notifications are delivered (from ``Settings``; the tests shorten the delays)."""

    rules: TargetRules = field(default_factory=TargetRules)
    bound_s: float = NOTIFY_DELIVERY_BOUND_S
    base_delay_s: float = 15.0
    max_delay_s: float = 600.0
    timeout_s: float = NOTIFY_TIMEOUT_S
    public_url: str | None = None
    eventgrid_endpoint: str | None = None
    source: str = "/dagq"
    """The CloudEvents ``source`` (``/dagq/{prefix}``)."""

    @classmethod
    def from_settings(cls, settings: Settings, website_hostname: str | None) -> DeliveryOptions:
        public = settings.public_url or (
            f"https://{website_hostname}" if website_hostname else None
        )
        return cls(
            rules=TargetRules(settings.notify_allow_private, settings.notify_allow_http),
            bound_s=settings.notify_retry_s,
            public_url=public,
            eventgrid_endpoint=settings.eventgrid_endpoint,
            source=f"/dagq/{settings.prefix}",
        )

    def delay(self, tries: int) -> float:
        """The backoff before try ``tries + 1``."""
        return min(self.max_delay_s, self.base_delay_s * 2.0 ** max(0, tries - 1))


PostWebhook = Callable[..., Awaitable[Answer]]


class Deliverer:
    """Delivers notifications of one deployment."""

    def __init__(
        self,
        storage: Storage,
        names: ResourceNames,
        options: DeliveryOptions,
        *,
        signer: Signer | None = None,
        verifier: Verifier | None = None,
        prices: PriceTable | None = None,
        resolve: Resolve = system_resolve,
    ) -> None:
        self.storage = storage
        self.queue = storage.queues.get(names.notify_queue)
        self.options = options
        self._signer = signer
        self._verifier = verifier
        self._prices = prices
        self._resolve = resolve

    async def handle(self, text: str, message_id: str, now: float) -> Outcome:
        """Deliver one message's notification (see the module's docstring)."""
        try:
            msg = NotifyMessage.model_validate_json(text)
            if self._verifier is not None:
                self._verifier.check(msg)
        except (ValidationError, MessageError) as exc:
            reason = f"malformed notification: {exc}"[:1000]
            return await self._dead(text, message_id, reason, now)
        try:
            wf, state = await read_workflow(self.storage, msg.workflow_id)
        except NotFoundError:
            log.info("notification of %s dropped: the workflow is gone", msg.workflow_id)
            return "dropped"
        except CodecError as exc:
            return await self._dead(text, message_id, f"cannot read the workflow: {exc}", now)
        verdict = confirm(msg, wf, state)
        if verdict == "drop":
            return "dropped"
        if verdict == "wait":
            return await self._later(msg, text, message_id, "the state does not show it yet", now)
        if msg.target is not None and msg.target >= len(wf.notify):
            return await self._dead(text, message_id, f"no webhook {msg.target}", now)
        where = f"notification {self.delivery_id(msg)} to {self._host(msg, wf)}: "
        report = await build_report(
            self.storage, msg, wf, state,
            public_url=self.options.public_url, cost=self._cost(wf, state, now),
        )  # fmt: skip
        try:
            answer = await self._post(msg, wf, report, now)
        except RefusedTarget as exc:
            return await self._dead(text, message_id, f"{where}webhook refused: {exc}", now)
        if answer.ok:
            return "delivered"
        if answer.permanent:
            reason = f"{where}webhook answered {answer.detail}"
            return await self._dead(text, message_id, reason, now)
        return await self._later(msg, text, message_id, answer.detail, now, where)

    @staticmethod
    def _host(msg: NotifyMessage, wf: CompiledWorkflow) -> str:
        if msg.target is None:
            return "the Event Grid topic"
        return urlsplit(wf.notify[msg.target].url).hostname or "?"

    def delivery_id(self, msg: NotifyMessage) -> str:
        """The same for every try of one notification (``X-Dagq-Delivery``, CloudEvent id)."""
        target = "eventgrid" if msg.target is None else str(msg.target)
        parts = [msg.workflow_id, str(msg.incarnation or 0), str(msg.run), msg.event]
        return ".".join([*parts, *([msg.task] if msg.task else []), target])

    async def _post(
        self, msg: NotifyMessage, wf: CompiledWorkflow, report: Report, now: float
    ) -> Answer:
        delivery = self.delivery_id(msg)
        if msg.target is None:
            if self.options.eventgrid_endpoint is None:
                raise RefusedTarget("no Event Grid topic is configured (DAGQ_EVENTGRID_ENDPOINT)")
            event = bodies.cloud_event(report, delivery, self.options.source)
            return await post_eventgrid(
                self.options.eventgrid_endpoint, [event], self.options.timeout_s
            )
        target = wf.notify[msg.target]
        body = bodies.render(report, target.format, delivery)
        headers = bodies.headers(msg.event, delivery, target.secret, body, now)
        return await post_webhook(
            target.url, body, headers, self.options.rules, self.options.timeout_s, self._resolve
        )

    def _cost(self, wf: CompiledWorkflow, state: RuntimeState, now: float) -> dict[str, Any] | None:
        if self._prices is None:
            return None
        try:
            cost = workflow_cost(wf, state, self._prices, now)
        except Exception:  # a cost is a nicety: never hold a notification back for it
            log.exception("cost of %s for its notification", state.workflow_id)
            return None
        fields = ("currency", "estimated_cost", "gpu_hours", "cpu_hours", "queue_wait_hours")
        return {name: getattr(cost, name) for name in fields}

    async def _later(
        self,
        msg: NotifyMessage,
        text: str,
        message_id: str,
        reason: str,
        now: float,
        where: str = "",
    ) -> Outcome:
        tries = msg.tries + 1
        first = msg.first_at if msg.first_at is not None else now
        delay = self.options.delay(tries)
        if now + delay - first > self.options.bound_s:
            bound = self.options.bound_s
            reason = f"{where}not delivered in {bound:g} s ({tries} tries); last: {reason}"
            return await self._dead(text, message_id, reason, now)
        again = replace_message(msg, tries=tries, first_at=first)
        if self._signer is not None:
            again = self._signer.sign(again)
        await self.queue.send(encode(again), delay_s=delay)
        log.info("notification %s: try %d failed (%s); again in %.0f s",
                 self.delivery_id(msg), tries, reason, delay)  # fmt: skip
        return "retrying"

    async def _dead(self, text: str, message_id: str, reason: str, now: float) -> Outcome:
        log.warning("notification dead-lettered: %s", reason)
        await self.storage.deadletters.put(
            message_id=message_id or "notify", text=text, reason=reason, received_at=now
        )
        return "dead"


def replace_message(msg: NotifyMessage, **changes: Any) -> NotifyMessage:
    """``msg`` with ``changes`` and no signature (a changed message is signed again)."""
    return msg.model_copy(update={**changes, "sig": None})


__all__ = ["Deliverer", "DeliveryOptions", "Outcome", "replace_message"]
