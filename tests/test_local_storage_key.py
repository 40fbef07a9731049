"""Every Azurite dagq starts (tests, make up, make demo) accepts a key of its own, never the
published development key: a web page that reaches 127.0.0.1 through DNS rebinding knows only the
published one, so it can sign no request the local stack's storage accepts (issue 33 item 2). The
files that hold a stack's key are its owner's alone."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from azure.core.exceptions import HttpResponseError
from azure.storage.queue.aio import QueueServiceClient

from devtools.azurite import Azurite
from devtools.stackenv import write_env
from shared.settings import AZURITE_KEY, azurite_connection_string


async def test_the_published_development_key_is_refused(azurite: Azurite) -> None:
    ports = azurite.bound
    published = azurite_connection_string(
        blob=ports["blob"], queue=ports["queue"], table=ports["table"]
    )
    assert azurite.key != AZURITE_KEY
    async with QueueServiceClient.from_connection_string(published) as stranger:
        with pytest.raises(HttpResponseError) as refused:
            await stranger.create_queue("rebinding")
    assert refused.value.status_code == 403
    async with QueueServiceClient.from_connection_string(azurite.connection_string) as owner:
        await owner.create_queue("rebinding")
        await owner.delete_queue("rebinding")


def test_a_stack_env_file_is_its_owners_alone(tmp_path: Path) -> None:
    path = tmp_path / "stack.env"
    path.write_text("old")
    path.chmod(0o644)
    write_env(path, {"DAGQ_STORAGE": "AccountKey=secret"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "secret" in path.read_text()
