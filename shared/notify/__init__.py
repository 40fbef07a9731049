"""Notifications (issue 29): delivering what the coordinator enqueued on the notify queue when a
workflow ended (``shared.coordinator.notices``) — webhooks (JSON, Slack, Teams; HMAC-SHA256
signed), the Event Grid topic (CloudEvents) — with the SSRF rules of ``guard``, retries with
backoff for a bounded time, then a dead letter. docs/notifications.md.

- ``guard``: which targets a deployment may call; every address of a name checked.
- ``report``: what a notification says, read from storage; whether the state confirms it.
- ``bodies``: the JSON body, Slack and Teams payloads, the CloudEvent, the signature.
- ``post``: the HTTP requests (the checked resolver; Event Grid with the app's token).
- ``delivery``: one message's delivery, its retries and dead letter.
"""

from shared.notify.delivery import Deliverer, DeliveryOptions, Outcome
from shared.notify.errors import RefusedTarget
from shared.notify.guard import TargetRules

__all__ = ["Deliverer", "DeliveryOptions", "Outcome", "RefusedTarget", "TargetRules"]
