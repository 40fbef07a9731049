"""Entry point of the notify queue's trigger (issue 29): deliver one notification
(``shared.notify``). One ``Deliverer`` per process, made on first use; it reads the workflow
through the app's storage and never touches the coordinator's lease, so a slow or failing
endpoint delays nothing but its own notification."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from shared.api.context import CONTEXT

if TYPE_CHECKING:
    import azure.functions as func

    from shared.notify import Deliverer

_deliverer: Deliverer | None = None


async def deliverer() -> Deliverer:
    """The process's deliverer, made on first use (settings and storage of the app)."""
    global _deliverer
    if _deliverer is None:
        from shared.cost.prices import load_prices
        from shared.notify import Deliverer, DeliveryOptions
        from shared.signing import signer_of, verifier_of

        settings = CONTEXT.settings
        options = DeliveryOptions.from_settings(settings, os.environ.get("WEBSITE_HOSTNAME"))
        try:
            prices = load_prices(settings.prices, settings.gpu_vm_sku)
        except Exception:  # a bad price table: notifications go out without a cost
            prices = None
        _deliverer = Deliverer(
            await CONTEXT.storage(), settings.names, options,
            signer=signer_of(settings.signing_key),
            verifier=verifier_of(settings.verify_keys, settings.signing_key),
            prices=prices,
        )  # fmt: skip
    return _deliverer


async def on_notify(msg: func.QueueMessage) -> None:
    """One notification from the notify queue. Returning lets the host delete it (delivered,
    re-sent for a later try, or dead-lettered); raising (storage trouble) makes it retry."""
    text = msg.get_body().decode("utf-8", errors="replace")
    await (await deliverer()).handle(text, msg.id or "", time.time())
