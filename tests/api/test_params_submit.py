"""Parameters at submit (issue 29): the server's submit path, the ``?param=NAME=VALUE`` query,
the client's ``params=``, the workflow's GET, idempotent submit and the task message."""

from __future__ import annotations

import azure.functions as func
import pytest

from shared.api import reads, service
from shared.api.param_query import param_values
from shared.client.operations import param_query
from shared.coordinator.dispatch import build_message
from shared.engine.commands import Dispatch
from shared.errors import ConflictError, DefinitionError, RequestError
from shared.storage.memory import memory_storage

DEFINITION = """
name: nightly
params:
  checkpoint: {description: the checkpoint to evaluate}
  lr: 0.1
tasks:
  - {name: eval, kwargs: {cmd: "evaluate --ckpt {{ params.checkpoint }} --lr {{ params.lr }}"}}
"""
NOW = 1_800_000_000.0


def request(query: str) -> func.HttpRequest:
    return func.HttpRequest("POST", f"http://h/api/workflows?{query}", params={}, body=b"")


def test_the_query_repeats_param_once_per_parameter() -> None:
    assert param_values(request("id=x&param=lr%3D0.5&param=checkpoint=a%20b")) == {
        "lr": "0.5", "checkpoint": "a b"
    }  # fmt: skip
    assert param_values(request("id=x")) is None
    # A value may hold '=' (only the first one splits).
    assert param_values(request("param=q=a=b")) == {"q": "a=b"}


@pytest.mark.parametrize("query", ["param=lr", "param==1", "param=a=1&param=a=2"])
def test_a_malformed_param_is_a_400(query: str) -> None:
    with pytest.raises(RequestError) as caught:
        param_values(request(query))
    assert caught.value.http_status == 400


def test_the_client_sends_text_as_the_api_reads_it() -> None:
    assert param_query({"a": True, "b": 0.1, "c": 3, "d": "x=y"}) == [
        "a=true", "b=0.1", "c=3", "d=x=y"
    ]  # fmt: skip


async def test_submit_stores_the_values_and_get_shows_them() -> None:
    storage = memory_storage("api")
    wf, encoded = service.compile_definition(DEFINITION, params={"checkpoint": "c7"})
    result = await service.submit(storage, wf, now=NOW, workflow_id="n1", encoded=encoded)
    view = await reads.get_workflow(storage, result.workflow_id)
    assert view.params == {"checkpoint": "c7", "lr": 0.1}
    assert view.model_dump(mode="json")["params"] == {"checkpoint": "c7", "lr": 0.1}


async def test_the_same_id_with_other_values_conflicts_and_the_same_repeats() -> None:
    storage = memory_storage("api")
    first, _ = service.compile_definition(DEFINITION, params={"checkpoint": "c7"})
    await service.submit(storage, first, now=NOW, workflow_id="n1")
    same, _ = service.compile_definition(DEFINITION, params={"checkpoint": "c7", "lr": "0.1"})
    again = await service.submit(storage, same, now=NOW, workflow_id="n1")
    assert not again.created
    other, _ = service.compile_definition(DEFINITION, params={"checkpoint": "c8"})
    with pytest.raises(ConflictError):
        await service.submit(storage, other, now=NOW, workflow_id="n1")


async def test_submit_takes_params_itself_as_a_schedule_calls_it() -> None:
    storage = memory_storage("api")
    wf, _ = service.compile_definition(DEFINITION, params={"checkpoint": "c0"})
    result = await service.submit(
        storage, wf, now=NOW, workflow_id="s1", params={"checkpoint": "c9"}
    )
    view = await reads.get_workflow(storage, result.workflow_id)
    assert view.params == {"checkpoint": "c9", "lr": 0.1}
    assert list(view.tasks) == ["eval"]
    with pytest.raises(DefinitionError) as caught:
        await service.submit(storage, wf, now=NOW, params={"checkpont": "x"})
    assert "did you mean 'checkpoint'?" in str(caught.value)


def test_every_task_message_carries_the_values_as_text() -> None:
    wf, _ = service.compile_definition(DEFINITION, params={"checkpoint": "c7", "lr": "2"})
    message = build_message("n1", wf, Dispatch(0, "eval", 1, "default", incarnation=7, run=1))
    assert message.params == {"checkpoint": "c7", "lr": "2"}
    assert message.cmd == "evaluate --ckpt c7 --lr 2"
    plain, _ = service.compile_definition("name: x\ntasks: [{name: a, kwargs: {cmd: 'true'}}]")
    message = build_message("n2", plain, Dispatch(0, "a", 1, "default", incarnation=7, run=1))
    assert message.params is None


def test_values_given_to_submit_keep_the_submit_s_cache_overrides() -> None:
    cached = DEFINITION.replace("kwargs: {cmd:", "cache: true, kwargs: {cmd:")
    wf, _ = service.compile_definition(cached, params={"checkpoint": "c0"}, no_cache=True)
    assert wf.tasks[0].cache is None
    again = service.with_params(wf, {"checkpoint": "c9"})
    assert again.params["checkpoint"] == "c9"
    assert again.tasks[0].cache is None
    refreshed, _ = service.compile_definition(
        cached, params={"checkpoint": "c0"}, refresh=("eval",)
    )
    assert service.with_params(refreshed, {"checkpoint": "c9"}).tasks[0].cache == (
        refreshed.tasks[0].cache
    )
