"""The dashboard's HTTP functions without a server: the page, its assets, the DAG's structure."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path

import azure.functions as func
import pytest

from shared.api import dashboard
from shared.definition.compiler import compile_text
from shared.views import dump

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
UI_DIR = REPO_ROOT / "shared" / "api" / "ui"


def get(
    path: str, *, route: dict[str, str] | None = None, headers: dict[str, str] | None = None
) -> func.HttpRequest:
    return func.HttpRequest(
        "GET", f"http://127.0.0.1:7071{path}", headers=headers or {}, params={},
        route_params=route or {}, body=b"",
    )  # fmt: skip


async def test_the_page_resolves_its_assets_and_api_against_where_it_was_served() -> None:
    response = await dashboard.dashboard(get("/api/ui"))
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    body = response.get_body().decode()
    assert '<script type="module" src="/api/ui/js/main.js">' in body
    assert 'href="/api/ui/style.css"' in body
    assert dashboard.BASE_MARKER not in body
    # A different route prefix (or a proxy path) moves the base with it.
    moved = await dashboard.dashboard(get("/proxy/x/api/UI/"))
    assert 'src="/proxy/x/api/UI/js/main.js"' in moved.get_body().decode()
    hostile = await dashboard.dashboard(get('/api/ui"><script>alert(1)</script>'))
    assert b"<script>alert" not in hostile.get_body()
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"


async def test_assets_have_their_content_type_and_revalidate_with_etags() -> None:
    response = await dashboard.dashboard_asset(
        get("/api/ui/js/main.js", route={"path": "js/main.js"})
    )
    assert response.status_code == 200
    assert response.mimetype == "text/javascript"
    etag = response.headers["ETag"]
    again = await dashboard.dashboard_asset(
        get("/api/ui/js/main.js", route={"path": "js/main.js"}, headers={"If-None-Match": etag})
    )
    assert again.status_code == 304
    assert again.get_body() == b""
    css = await dashboard.dashboard_asset(get("/api/ui/style.css", route={"path": "style.css"}))
    assert css.mimetype == "text/css"


@pytest.mark.parametrize(
    "path",
    ["../dashboard.py", "../../function_app.py", "js/../../http.py", "/etc/passwd",
     "%2e%2e/http.py", "vendor", "nothing.js", "js/main.js.map", "..\\dashboard.py"],
)  # fmt: skip
async def test_only_the_dashboards_own_files_are_served(path: str) -> None:
    response = await dashboard.dashboard_asset(get(f"/api/ui/{path}", route={"path": path}))
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"
    assert "the dashboard has no file" in json.loads(response.get_body())["detail"]


def test_every_file_of_the_dashboard_is_packaged_and_deployed() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["package-data"]["shared"]
    files = [
        p.relative_to(REPO_ROOT / "shared").as_posix() for p in UI_DIR.rglob("*") if p.is_file()
    ]
    assert "api/ui/index.html" in files
    assert "api/ui/vendor/dagre.min.js" in files
    for name in files:
        assert any(fnmatch.fnmatchcase(name, pattern) and name.count("/") == pattern.count("/")
                   for pattern in patterns), f"{name} is not package data"  # fmt: skip
    ignored = (REPO_ROOT / ".funcignore").read_text().split()
    for name in files:
        parts = ("shared/" + name).split("/")
        assert not any(
            fnmatch.fnmatchcase(part, entry.strip("/")) for entry in ignored for part in parts
        ), name
    servable = set(dashboard.assets())
    assert {
        f.removeprefix("api/ui/") for f in files if Path(f).suffix in dashboard.CONTENT_TYPES
    } == servable


def test_the_layout_library_is_the_pinned_version_with_its_license() -> None:
    pinned = json.loads((REPO_ROOT / "package.json").read_text())["devDependencies"][
        "@dagrejs/dagre"
    ]
    assert pinned[0].isdigit(), "pin an exact version: the vendored file must match it"
    vendored = (UI_DIR / "vendor" / "dagre.min.js").read_text()
    assert f'"{pinned}"' in vendored  # dagre.version
    assert "sourceMappingURL" not in vendored  # the map is not shipped: no 404 in the console
    assert "Permission is hereby granted" in (UI_DIR / "vendor" / "dagre.LICENSE.txt").read_text()
    assert (
        "Permission is hereby granted" in (UI_DIR / "vendor" / "graphlib.LICENSE.txt").read_text()
    )
    source = REPO_ROOT / "node_modules" / "@dagrejs" / "dagre" / "dist" / "dagre.min.js"
    if source.exists():  # `make vendor-ui` copies it, dropping only the source map comment
        lines = [line for line in source.read_text().splitlines(keepends=True)
                 if not line.startswith("//# sourceMappingURL=")]  # fmt: skip
        assert "".join(lines) == vendored


def test_the_graph_gives_every_task_its_foreach_group_and_parents() -> None:
    wf = compile_text(
        """
name: fan
tasks:
  - name: prep
    kwargs: {cmd: "true"}
  - name: train
    depends_on: [prep]
    foreach: {seed: [1, 2, 3]}
    kwargs: {cmd: "echo {{ seed }}"}
  - name: join
    depends_on: [train]
    kwargs: {cmd: "true"}
""",
        source="test",
    )
    view = dump(dashboard.graph_view("wf-1", wf))
    names = [t["name"] for t in view["tasks"]]
    assert names[0] == "prep"
    assert names[-1] == "join"
    train = [t for t in view["tasks"] if t["group"] == "train"]
    assert len(train) == 3
    assert all(t["parents"] == [0] for t in train)
    join = view["tasks"][-1]
    assert sorted(names[i] for i in join["parents"]) == sorted(t["name"] for t in train)
    assert view["tasks"][0]["group"] is None
    json.dumps(view)  # JSON-ready
