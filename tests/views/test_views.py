"""The answers' shapes (shared/views/): the contract of server and client. Every view is frozen and
keeps fields it does not know, so a client parses the answers of a newer server; an answer leaves
out the defaults its server did not set."""

from __future__ import annotations

import pydantic
import pytest

from shared.views import COMPONENTS, CancelAccepted, Submitted
from shared.views.base import View, dump


@pytest.mark.parametrize("view", COMPONENTS, ids=lambda view: view.__name__)
def test_every_view_is_frozen_and_keeps_what_it_does_not_know(view: type[View]) -> None:
    assert issubclass(view, View)
    assert view.model_config.get("frozen") is True
    assert view.model_config.get("extra") == "allow"
    assert view.__doc__, f"{view.__name__} says what it answers"


def test_a_newer_servers_field_survives_a_round_trip() -> None:
    answer = {
        "id": "w1",
        "status": "pending",
        "url": "http://127.0.0.1/api/workflows/w1",
        "added_later": {"by": "a newer server"},
    }
    parsed = Submitted.model_validate(answer)
    assert dump(parsed) == answer
    with pytest.raises(pydantic.ValidationError):
        parsed.id = "w2"  # type: ignore[misc]


def test_dump_leaves_out_defaults_nobody_set() -> None:
    sent = {"id": "w1", "status": "cancelling", "url": "u", "cancel_requested": True}
    parsed = CancelAccepted.model_validate(sent)
    assert parsed.detail is None  # a default: not part of the answer
    assert dump(parsed) == sent
