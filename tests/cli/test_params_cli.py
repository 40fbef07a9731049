"""``--param NAME=VALUE`` of ``dagq submit`` and ``dagq validate``, and the run's parameters in
``dagq status`` and ``dagq cost`` (issue 29)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from rich.console import Console

from shared.cli import main
from shared.cli.cost_render import workflow_view
from shared.cli.render import status_view
from shared.client import Workflow
from shared.views import WorkflowCost
from tests.support.fake_api import fake_api, workflow_body

NIGHTLY = """\
name: nightly
params:
  checkpoint: {description: the checkpoint}
  lr: 0.1
tasks:
  - name: evaluate
    kwargs: {cmd: "evaluate --ckpt {{ params.checkpoint }} --lr {{ params.lr }}"}
"""


def text_of(renderable: object) -> str:
    console = Console(width=100, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.fixture
def nightly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "none.toml").write_text("")
    monkeypatch.setenv("DAGQ_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("DAGQ_API_KEY", raising=False)
    path = tmp_path / "nightly.yaml"
    path.write_text(NIGHTLY)
    return path


def test_submit_sends_each_param_once(nightly: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with fake_api() as api:
        api.on("POST", "/api/workflows", 201, {"id": "n1", "status": "pending", "url": "u"})
        code = main(["submit", str(nightly), "--api-url", api.url,
                     "--param", "checkpoint=ckpt 42", "--param", "lr=0.01"])  # fmt: skip
        assert code == 0
        query = parse_qs(api.requests[0]["query"])
    assert query["param"] == ["checkpoint=ckpt 42", "lr=0.01"]
    assert capsys.readouterr().out.strip() == "n1"


@pytest.mark.parametrize("bad", ["lr", "=1"])
def test_a_malformed_param_exits_2_before_any_request(
    nightly: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_api() as api:
        assert main(["submit", str(nightly), "--api-url", api.url, "--param", bad]) == 2
        assert api.requests == []
    assert "--param must be NAME=VALUE" in capsys.readouterr().err


def test_validate_needs_no_value_and_checks_given_ones(
    nightly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(nightly)]) == 0
    assert "params: checkpoint, lr" in capsys.readouterr().out
    assert main(["validate", str(nightly), "--param", "lr=0.5"]) == 2
    err = capsys.readouterr().err
    assert "params.checkpoint: parameter 'checkpoint' is required" in err
    assert main(["validate", str(nightly), "--param", "checkpoint=c", "--param", "lrr=1"]) == 2
    assert "param lrr: no parameter 'lrr' is declared; did you mean 'lr'?" in (
        capsys.readouterr().err
    )


def test_status_shows_the_run_s_parameters() -> None:
    wf = Workflow.model_validate(
        workflow_body(params={"checkpoint": "ckpt-0042", "lr": 0.01, "fast": True})
    )
    shown = text_of(status_view(wf))
    assert "params  checkpoint=ckpt-0042  lr=0.01  fast=true" in shown
    assert "params" not in text_of(status_view(Workflow.model_validate(workflow_body())))


def test_a_long_or_multi_line_value_stays_on_its_line() -> None:
    wf = Workflow.model_validate(workflow_body(params={"note": "a\nb" + "x" * 100}))
    shown = text_of(status_view(wf))
    assert "note=a\\nbxxx" in shown
    assert "…" in shown


def test_cost_shows_the_run_s_parameters() -> None:
    cost = WorkflowCost.model_validate(
        {"id": "n1", "name": "nightly", "currency": "USD", "gpu_hours": 0, "cpu_hours": 0,
         "queue_wait_hours": 0, "compute_cost": 0, "storage_requests": 0, "storage_cost": 0,
         "estimated_cost": 0, "cached_saved_hours": 0, "cached_saved_cost": 0,
         "params": {"checkpoint": "c7"}}
    )  # fmt: skip
    assert "params  checkpoint=c7" in text_of(workflow_view(cost))


def test_status_json_carries_the_values_with_their_types() -> None:
    wf = Workflow.model_validate(workflow_body(params={"lr": 0.01, "fast": False}))
    assert json.loads(wf.model_dump_json())["params"] == {"lr": 0.01, "fast": False}
