"""The attempt claim: a create-only blob per attempt that keeps a duplicate dispatch from running.

The coordinator may send one attempt twice (a pass that sent it and lost its write, a repair, a
send repeated after a lost reply). The first message to claim ``{wf}/{incarnation}/{task}/
{attempt}/claim`` (its content: the message id) runs the attempt; a redelivery of that same
message passes the claim again, any other message of the attempt is dropped unrun.
"""

from __future__ import annotations

from shared.errors import NotFoundError
from shared.messages import TaskMessage
from shared.storage.ports import OutputBlobs, ReceivedMessage


async def claim(outputs: OutputBlobs, message: TaskMessage, received: ReceivedMessage) -> bool:
    """True if ``received`` may run its attempt (the first claim, or a redelivery of it)."""
    name = message.claim_blob()
    if await outputs.create_if_absent(name, received.id.encode()):
        return True
    try:
        owner = await outputs.get(name)
    except NotFoundError:
        return True
    return owner.decode(errors="replace") == received.id
