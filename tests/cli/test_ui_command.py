"""``dagq ui``: the dashboard URL of the configured deployment, opened in a browser where there is
one, printed where there is not; the function key never goes into the URL."""

from __future__ import annotations

import os
import stat
import webbrowser
from pathlib import Path

import pytest

from shared.cli import main


@pytest.fixture
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config.toml"
    config.write_text('api_url = "https://dagq-prod.example.net/"\napi_key = "s3cret"\n')
    monkeypatch.setenv("DAGQ_CONFIG", str(config))
    for name in ("DAGQ_API_URL", "DAGQ_API_KEY", "DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    return config


def test_prints_the_configured_dashboard_without_the_key(
    no_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ui", "20261201-104922-8inor2"]) == 0
    out, err = capsys.readouterr()
    assert (
        out.splitlines()[0] == "https://dagq-prod.example.net/api/ui#/runs/20261201-104922-8inor2"
    )
    assert "s3cret" not in out + err
    assert "paste it once" in out
    assert "no browser available" in err  # no display: print, never a text browser here


def test_api_url_option_wins_and_no_browser_only_prints(
    no_config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISPLAY", ":0")
    assert main(["ui", "--api-url", "http://127.0.0.1:7071", "--no-browser"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "http://127.0.0.1:7071/api/ui"
    assert err == ""


def test_opens_the_browser_where_there_is_one(
    no_config: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "fake-browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setenv("BROWSER", str(browser))
    # webbrowser reads $BROWSER once per process: make it read it again.
    monkeypatch.setattr(webbrowser, "_tryorder", None)
    monkeypatch.setattr(webbrowser, "_browsers", {})
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert main(["ui", "--api-url", "http://127.0.0.1:7071", "wf-1"]) == 0
    assert opened.read_text() == "http://127.0.0.1:7071/api/ui#/runs/wf-1"
    assert "no browser" not in capsys.readouterr().err
