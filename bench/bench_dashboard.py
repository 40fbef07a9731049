"""The dashboard's drawing cost in headless chromium, for fan-outs of 100, 1,000 and 10,000 tasks.

The DAG's layout should grow with the collapsed graph (a foreach is one node), not with the tasks;
the Gantt chart draws one bar per attempt, so it grows with them. The page is served by the app
under the local host; the workflow's two API answers are made up by the browser's request routing
(devtools/testing/synthetic_run.py), so nothing has to run first. Prints key=value lines measured in
one run: dag_nodes_N, dag_layout_ms_N, gantt_bars_N, gantt_render_ms_N (N = tasks).

    python bench/bench_dashboard.py
"""

from __future__ import annotations

import re
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.azurite import Azurite
from devtools.browser import browser_context, chromium_path
from devtools.testing.api_host import start_host
from devtools.testing.synthetic_run import fan_out

SIZES = (100, 1_000, 10_000)


def main() -> int:
    if chromium_path() is None:
        print("dashboard_bench=skipped reason=chromium-not-installed")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        azurite = Azurite(location=Path(tmp) / "azurite").start()
        env = {"DAGQ_STORAGE": azurite.connection_string, "DAGQ_PREFIX": "b" + uuid.uuid4().hex[:8]}
        host = start_host(env, Path(tmp) / "host.log")
        try:
            with browser_context() as context:
                for n in SIZES:
                    measure(context, host.url, n)
        finally:
            host.stop()
            azurite.stop()
    return 0


def measure(context: object, api_url: str, n: int) -> None:
    graph, view = fan_out(n, merge_attempt=1, done=True)
    page = context.new_page()  # type: ignore[attr-defined]
    page.route(re.compile(r".*/api/workflows/synthetic/graph$"), lambda r: r.fulfill(json=graph))
    page.route(re.compile(r".*/api/workflows/synthetic$"), lambda r: r.fulfill(json=view))
    page.goto(f"{api_url}/ui#/runs/synthetic")
    dag = page.locator("svg.dag")
    dag.wait_for(timeout=120_000)
    print(f"dag_nodes_{n}={dag.get_attribute('data-nodes')}")
    print(f"dag_layout_ms_{n}={dag.get_attribute('data-layout-ms')}")
    page.goto(f"{api_url}/ui#/runs/synthetic/gantt")
    gantt = page.locator("svg.gantt")
    gantt.wait_for(timeout=120_000)
    print(f"gantt_bars_{n}={gantt.get_attribute('data-bars')}")
    print(f"gantt_render_ms_{n}={gantt.get_attribute('data-render-ms')}")
    page.close()


if __name__ == "__main__":
    sys.exit(main())
