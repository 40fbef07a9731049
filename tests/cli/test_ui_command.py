"""``dagq ui``: the dashboard URL of the configured deployment, opened in a browser where there is
one, printed where there is not; the function key never goes into the URL; an API that does not
answer is said to be down (exit 4), not opened as a blank page."""

from __future__ import annotations

import os
import socket
import stat
import webbrowser
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.cli import main
from shared.cli.exitcodes import ExitCode
from tests.support.fake_api import FakeApi, fake_api


@pytest.fixture
def api() -> Iterator[FakeApi]:
    """A deployment that answers (its health report)."""
    with fake_api() as api:
        api.on("GET", "/api/health", 200, {"status": "ok"})
        yield api


@pytest.fixture
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api: FakeApi) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(f'api_url = "{api.url}/"\napi_key = "s3cret"\n')
    monkeypatch.setenv("DAGQ_CONFIG", str(config))
    for name in ("DAGQ_API_URL", "DAGQ_API_KEY", "DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    return config


def test_prints_the_configured_dashboard_without_the_key(
    no_config: Path, api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ui", "20261201-104922-8inor2"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == f"{api.url}/api/ui#/runs/20261201-104922-8inor2"
    assert "s3cret" not in out + err
    assert "paste it once" in out
    assert "no browser available" in err  # no display: print, never a text browser here


def test_api_url_option_wins_and_no_browser_only_prints(
    no_config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISPLAY", ":0")
    with fake_api() as other:
        other.on("GET", "/api/health", 200, {"status": "ok"})
        assert main(["ui", "--api-url", other.url, "--no-browser"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == f"{other.url}/api/ui"
    assert err == ""


def test_with_the_api_down_it_says_so_and_exits_non_zero(
    no_config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing listens at the URL (the local stack is not up): say so and how to start it, exit
    4, and open no browser on a page that cannot load."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setenv("BROWSER", "false")
    monkeypatch.setattr(webbrowser, "_tryorder", None)
    monkeypatch.setattr(webbrowser, "_browsers", {})
    assert main(["ui", "--api-url", down]) == ExitCode.API_ERROR
    err = capsys.readouterr().err
    assert "cannot reach the dagq API" in err
    assert "make up" in err


def test_opens_the_browser_where_there_is_one(
    no_config: Path,
    api: FakeApi,
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
    assert main(["ui", "--api-url", api.url, "wf-1"]) == 0
    assert opened.read_text() == f"{api.url}/api/ui#/runs/wf-1"
    assert "no browser" not in capsys.readouterr().err
