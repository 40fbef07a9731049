"""Queues in memory: visibility timeouts, a new pop receipt on every receive and extend, delayed
sends, dequeue counts."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from shared.limits import MAX_MESSAGE_BYTES, MAX_VISIBILITY_S
from shared.storage.memory.clock import Clock
from shared.storage.ports import ReceivedMessage
from shared.storage.rules import too_large


@dataclass
class _StoredMessage:
    id: str
    text: str
    visible_at: float
    inserted_at: float
    pop_receipt: str | None = None
    dequeue_count: int = 0


@dataclass
class MemoryQueueState:
    """The messages of one queue, in insertion order."""

    name: str
    messages: dict[str, _StoredMessage] = field(default_factory=dict)


class MemoryQueue:
    """A Queue handle over the shared queue states of a MemoryQueues.

    Like the Azure adapter: a send to a missing queue creates it; receive, count and delete on a
    missing queue see an empty queue.
    """

    def __init__(self, queues: MemoryQueues, name: str) -> None:
        self._queues = queues
        self.name = name

    @property
    def _state(self) -> MemoryQueueState | None:
        return self._queues.states.get(self.name)

    async def ensure(self) -> None:
        self._queues.states.setdefault(self.name, MemoryQueueState(self.name))

    async def send(self, text: str, *, delay_s: float = 0.0) -> None:
        if len(text.encode()) > MAX_MESSAGE_BYTES:
            raise too_large(self.name, text)
        await self.ensure()
        state = self._queues.states[self.name]
        now = self._queues.clock()
        delay = min(max(delay_s, 0.0), MAX_VISIBILITY_S)
        message = _StoredMessage(str(uuid.uuid4()), text, visible_at=now + delay, inserted_at=now)
        state.messages[message.id] = message

    async def receive(self, max_messages: int, visibility_s: int) -> list[ReceivedMessage]:
        state = self._state
        if state is None or max_messages <= 0:
            return []
        now = self._queues.clock()
        taken: list[ReceivedMessage] = []
        for message in state.messages.values():
            if len(taken) >= max_messages:
                break
            if message.visible_at > now:
                continue
            # Azure requires at least 1 s on receive (0 is only valid when extending).
            message.visible_at = now + min(max(visibility_s, 1), MAX_VISIBILITY_S)
            message.pop_receipt = uuid.uuid4().hex
            message.dequeue_count += 1
            taken.append(self._received(message))
        return taken

    @staticmethod
    def _received(message: _StoredMessage) -> ReceivedMessage:
        assert message.pop_receipt is not None
        return ReceivedMessage(
            id=message.id,
            pop_receipt=message.pop_receipt,
            text=message.text,
            dequeue_count=message.dequeue_count,
            inserted_at=message.inserted_at,
        )

    def _current(self, received: ReceivedMessage) -> _StoredMessage | None:
        state = self._state
        stored = state.messages.get(received.id) if state else None
        if stored is None or stored.pop_receipt != received.pop_receipt:
            return None
        return stored

    async def delete(self, message: ReceivedMessage) -> bool:
        stored = self._current(message)
        if stored is None:
            return False
        state = self._state
        assert state is not None
        del state.messages[stored.id]
        return True

    async def extend(self, message: ReceivedMessage, visibility_s: int) -> ReceivedMessage | None:
        stored = self._current(message)
        if stored is None:
            return None
        stored.visible_at = self._queues.clock() + min(max(visibility_s, 0), MAX_VISIBILITY_S)
        stored.pop_receipt = uuid.uuid4().hex
        return replace(message, pop_receipt=stored.pop_receipt)

    async def approximate_count(self) -> int:
        state = self._state
        return len(state.messages) if state else 0

    async def oldest_visible_at(self) -> float | None:
        state = self._state
        now = self._queues.clock()
        visible = (m for m in (state.messages.values() if state else ()) if m.visible_at <= now)
        return next((m.inserted_at for m in visible), None)

    # -- test helpers (not part of the port) ---------------------------------------------------
    def peek_texts(self) -> list[str]:
        """Every message's text, visible or not, in insertion order."""
        state = self._state
        return [m.text for m in state.messages.values()] if state else []


class MemoryQueues:
    """Queues of one in-memory account; handles are cached and share the queue states."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.states: dict[str, MemoryQueueState] = {}
        self._handles: dict[str, MemoryQueue] = {}

    def get(self, azure_name: str) -> MemoryQueue:
        handle = self._handles.get(azure_name)
        if handle is None:
            handle = self._handles[azure_name] = MemoryQueue(self, azure_name)
        return handle

    async def list_names(self, prefix: str) -> list[str]:
        return sorted(name for name in self.states if name.startswith(prefix))
