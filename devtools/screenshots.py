"""``make screenshots``: the dashboard's views as PNGs, in ``.run/screenshots/`` to look at, or
with ``--update`` (``make screenshots UPDATE=1``) in docs/screenshots/, the ones the README shows.

By default no tracked file changes: every run draws slightly different pixels (times, ids), so
rewriting docs/screenshots/ each time would dirty the tree for nothing. Starts the demo's stack
(Azurite, the app under the local host, cpu and gpu workers) in ``.run/screenshots/stack``, runs
``examples/pipeline.yaml`` plus a few small workflows that give the list some variety (a foreach
sweep, a failure, a cancelled run), and photographs each view in headless chromium on a
laptop-sized viewport. Everything stays on 127.0.0.1; everything started is stopped.

    python -m devtools.screenshots [--update | --out DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from devtools.browser import browser_context
from devtools.demo import EXAMPLES, REPO_ROOT, DemoStack, dashboard_url

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from shared.client import Client

DOCS_OUT = REPO_ROOT / "docs" / "screenshots"
"""The README's screenshots: written only when asked (``--update``)."""
RUN_DIR = REPO_ROOT / ".run" / "screenshots"
"""Where the PNGs go by default (git-ignored); the stack lives in its ``stack`` folder."""
SWEEP = """
name: seed-sweep
default_queue: cpu
tasks:
  - name: fetch
    kwargs: {cmd: "sleep 0.3; echo fetched"}
  - name: fit
    depends_on: [fetch]
    foreach:
      seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    kwargs: {cmd: "sleep 2; echo seed {{ seed }}"}
  - name: report
    depends_on: [fit]
    kwargs: {cmd: "echo report"}
"""
BROKEN = """
name: nightly-etl
default_queue: cpu
tasks:
  - name: extract
    kwargs: {cmd: "echo extracted"}
  - name: transform
    depends_on: [extract]
    kwargs: {cmd: "echo 'schema mismatch in column price' >&2; exit 3"}
  - name: load
    depends_on: [transform]
    kwargs: {cmd: "echo loaded"}
"""
LONG = """
name: backfill-2026
default_queue: cpu
tasks:
  - name: backfill
    kwargs: {cmd: "sleep 120"}
"""


def shoot(page: Page, name: str, out: Path) -> None:
    page.wait_for_timeout(300)  # let the last refresh paint
    page.screenshot(path=str(out / f"{name}.png"))
    print(f"wrote {out / name}.png")


def take(client: Client, base: str, out: Path) -> None:
    from playwright.sync_api import expect

    broken = client.submit(BROKEN).id
    cancelled = client.submit(LONG).id
    pipeline = client.submit_file(EXAMPLES / "pipeline.yaml").id
    with browser_context() as context:
        page = context.new_page()
        page.set_default_timeout(90_000)
        page.goto(f"{base}#/runs/{pipeline}")
        page.locator("svg.dag .node[data-state='running'][data-name^='train']").first.wait_for()
        shoot(page, "dag-live", out)
        page.goto(f"{base}#/workers")
        page.locator("#workers table").wait_for()
        page.locator("#workers td", has_text="2/2").first.wait_for()  # the gpu worker is busy
        shoot(page, "workers", out)
        client.cancel(cancelled)
        page.goto(f"{base}#/runs/{pipeline}/gantt")
        expect(page.locator("h1 .badge")).to_have_text("completed", timeout=90_000)
        shoot(page, "gantt", out)
        page.goto(f"{base}#/runs/{pipeline}")
        page.locator("svg.dag").wait_for()
        shoot(page, "dag", out)
        page.locator("svg.dag .node[data-name='evaluate']").click()
        page.locator("#task-log pre").wait_for()
        shoot(page, "task", out)
        sweep = client.submit(SWEEP).id
        page.goto(f"{base}#/runs/{sweep}?group=fit")
        page.locator("svg.dag .node[data-kind='group'][data-state='running']").wait_for()
        page.wait_for_timeout(2500)
        shoot(page, "foreach", out)
        expect(page.locator("h1 .badge")).to_have_text("completed", timeout=90_000)
        page.goto(base)
        page.locator(f"tr[data-id='{broken}']").wait_for()
        expect(page.locator(f"tr[data-id='{cancelled}'] .badge")).to_have_text(
            "cancelled", timeout=60_000
        )
        shoot(page, "workflows", out)


def capture(out: Path) -> None:
    """Start the demo's stack in ``RUN_DIR/stack``, photograph the views into ``out``, stop it."""
    from shared.client import Client

    stack_dir = RUN_DIR / "stack"
    if stack_dir.exists():
        shutil.rmtree(stack_dir)
    stack_dir.mkdir(parents=True)
    out.mkdir(parents=True, exist_ok=True)
    stack = DemoStack(stack_dir)
    try:
        stack.start()
        with Client(stack.api_url) as client:
            take(client, dashboard_url(stack.api_url), out)
    finally:
        stack.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.screenshots", description=__doc__)
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--update",
        action="store_true",
        help=f"write the README's screenshots ({DOCS_OUT.relative_to(REPO_ROOT)}/)",
    )
    where.add_argument(
        "--out", type=Path, help=f"where the PNGs go (default {RUN_DIR.relative_to(REPO_ROOT)}/)"
    )
    args = parser.parse_args(argv)
    out: Path = DOCS_OUT if args.update else (args.out or RUN_DIR)
    capture(out.resolve())
    if not args.update:
        print(f"the README's screenshots ({DOCS_OUT.relative_to(REPO_ROOT)}/) are unchanged:"
              " make screenshots UPDATE=1 replaces them")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
