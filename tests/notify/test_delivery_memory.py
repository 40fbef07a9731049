"""The notify function's checks before any request (issue 29), over the in-memory storage: a
notification the app did not sign (with verify keys set) or that is malformed is dead-lettered
with its reason; one for a purged workflow is dropped; one the stored state does not show yet
waits (sent again, delayed) instead of being delivered."""

from __future__ import annotations

from shared.api import service
from shared.messages import NotifyMessage, encode
from shared.names import ResourceNames
from shared.notify import Deliverer, DeliveryOptions
from shared.signing import new_key_pair, signer_of, verifier_of
from shared.storage.memory import memory_storage

NAMES = ResourceNames("mem")
NOW = 1_800_000_000.0
DEFINITION = """
name: told
notify: [{url: "https://hooks.example.com/dagq"}]
tasks:
  - {name: a, kwargs: {cmd: "true"}}
"""


def deliverer(storage, **kw):  # type: ignore[no-untyped-def]
    return Deliverer(storage, NAMES, DeliveryOptions(base_delay_s=1, max_delay_s=1), **kw)


async def test_an_unsigned_or_malformed_notification_is_dead_lettered() -> None:
    storage = memory_storage("mem")
    private, public = new_key_pair()
    strict = deliverer(storage, signer=signer_of(private), verifier=verifier_of(public))
    forged = encode(NotifyMessage(workflow_id="w1", event="completed", at=NOW, target=0))
    assert await strict.handle(forged, "m1", NOW) == "dead"
    assert await strict.handle("{not json", "m2", NOW) == "dead"
    reasons = [letter.reason for letter in await storage.deadletters.list()]
    assert any("not signed by the app" in r for r in reasons), reasons
    assert all(r.startswith("malformed notification") for r in reasons)


async def test_a_purged_workflow_is_dropped_and_an_unconfirmed_end_waits() -> None:
    storage = memory_storage("mem")
    plain = deliverer(storage)
    gone = encode(NotifyMessage(workflow_id="gone", event="failed", at=NOW, target=0))
    assert await plain.handle(gone, "m1", NOW) == "dropped"

    wf, encoded = service.compile_definition(DEFINITION)
    await service.submit(storage, wf, now=NOW, workflow_id="w1", encoded=encoded)
    # The workflow is pending (no coordinator ran): its end is not stored yet.
    early = NotifyMessage(workflow_id="w1", event="completed", at=NOW, target=0)
    assert await plain.handle(encode(early), "m2", NOW) == "retrying"
    queue = storage.queues.get(NAMES.notify_queue)
    texts = queue.peek_texts()  # type: ignore[attr-defined]
    [again] = [NotifyMessage.model_validate_json(t) for t in texts]
    assert again == early.model_copy(update={"tries": 1, "first_at": NOW})
    assert await storage.deadletters.list() == []
