"""notify-poison: what the Functions host moved there is dead-lettered with why, never left.

On memory, Azurite and lossy Azurite (the ``storage`` contract fixture): partition 0's sweep
empties ``{prefix}-notify-poison`` into the dead-letter store, naming the workflow, the event and
the target of each notification, and an unreadable message as such."""

from __future__ import annotations

from shared.coordinator import Coordinator
from shared.messages import NotifyMessage, encode
from shared.names import ResourceNames
from shared.storage.ports import Storage
from tests.coordinator.helpers import fast_options


async def test_poisoned_notifications_are_dead_lettered_with_the_reason(
    storage: Storage, prefix: str
) -> None:
    names = ResourceNames(prefix)
    poison = storage.queues.get(names.notify_poison_queue)
    await poison.ensure()
    webhook = encode(NotifyMessage(workflow_id="nightly-1", event="failed", at=1.0, target=0))
    grid = encode(NotifyMessage(workflow_id="w2", event="task_failed", task="train", at=2.0))
    for text in (webhook, grid, "{garbage"):
        await poison.send(text)

    result = await Coordinator(storage, names, fast_options()).run_sweeps()

    assert result.stats.sweep["notify_poison"] == 3
    assert result.stats.dead_lettered == 3
    reasons = {letter.text: letter.reason for letter in await storage.deadletters.list()}
    assert reasons[webhook].startswith("notification of workflow nightly-1 failed to webhook 0:")
    assert reasons[grid].startswith("notification of workflow w2 task train task_failed to Event")
    assert reasons["{garbage"].startswith("an unreadable notification:")
    assert all(names.notify_poison_queue in reason for reason in reasons.values())
    assert await poison.approximate_count() == 0


async def test_only_partition_0_reads_the_notify_poison_queue(
    storage: Storage, prefix: str
) -> None:
    names = ResourceNames(prefix)
    poison = storage.queues.get(names.notify_poison_queue)
    await poison.ensure()
    await poison.send("{garbage")
    view = storage.for_partition(1)
    await view.event_queue.ensure()
    await view.event_poison_queue.ensure()

    result = await Coordinator(view, names, fast_options()).run_sweeps()

    assert "notify_poison" not in result.stats.sweep
    assert await poison.approximate_count() == 1
