"""Every message shape that crosses a process boundary through a queue, in one package.

- ``TaskMessage``: coordinator -> worker, on a task queue (``{prefix}-q-{queue}``).
- ``Event``: worker or API -> coordinator, on the event queue (``{prefix}-events``).

Encoding, one convention for every queue: compact UTF-8 JSON sent as plain text (the Functions host
has ``"messageEncoding": "none"``). Every message dagq writes stays below ``MESSAGE_BUDGET_BYTES``
whatever the workflow: outputs and fan-in lists that would not fit travel as blob references.

Messages are untrusted input: every field is bounded where it is decoded (``fields``: ids and
names by the rules of ``shared.names``, attempts and runs within the state's 32-bit columns,
finite timestamps in a sane range, lengths of free text), and a blob name an event carries must be
the conventional one for its workflow, task and attempt — so nothing a message says can reach past
the outputs container or overflow the state codec.

The shapes live in ``tasks`` (the task message, output references), ``events`` (the events and the
notification message) and ``wrappers`` (an event batch, a redelivery); ``base`` is their common
base and the encoder, ``fields`` the bounded field types. Import them from here.
"""

from shared.messages.base import SignedMessage, encode
from shared.messages.events import (
    ActivateEvent,
    CancelEvent,
    Event,
    FailureReason,
    NotifyMessage,
    RetryEvent,
    TaskCompletedEvent,
    TaskEvent,
    TaskFailedEvent,
    TaskStartedEvent,
    decode_event,
)
from shared.messages.tasks import (
    INLINE_OUTPUT_BYTES,
    OutputRef,
    ReportFields,
    TaskMessage,
    decode_task_message,
    upstream_digest,
)

__all__ = [
    "INLINE_OUTPUT_BYTES",
    "ActivateEvent",
    "CancelEvent",
    "Event",
    "FailureReason",
    "NotifyMessage",
    "OutputRef",
    "ReportFields",
    "RetryEvent",
    "SignedMessage",
    "TaskCompletedEvent",
    "TaskEvent",
    "TaskFailedEvent",
    "TaskMessage",
    "TaskStartedEvent",
    "decode_event",
    "decode_task_message",
    "encode",
    "upstream_digest",
]
