"""``make demo``: the whole of dagq on one machine, in about a minute.

Each run has a folder of its own, ``.run/demo/<UTC date-time>/`` (earlier runs' folders are kept:
the outputs, logs and model card a run points to stay where it said; ``make clean`` removes them).

1. starts Azurite (persisted under the run's ``azurite/``), the Functions app under the local
   host, and worker agents for the ``cpu`` queue and the ``gpu`` queue (two fake GPU ids, so each
   training run gets its own ``CUDA_VISIBLE_DEVICES``), all on free ports;
2. submits ``examples/pipeline.yaml`` (CPU prep -> 6 "GPU" training runs -> CPU evaluation ->
   conditional publish) and shows it live until it ends;
3. prints the outcome and the best run, saves every task's output (``outputs.json``) and log
   (``logs/<task>.log``) in the run's folder, next to the published model card, and says where;
4. with ``--keep`` (``make demo KEEP=1``), writes ``.run/demo/stack.env`` (the stack's API URL,
   storage and prefix: ``devtools.stackenv``), prints the line that loads it in a shell for the
   ``dagq`` CLI and the dashboard's URL, and keeps the stack up until Ctrl-C (then removes it);
5. stops everything it started: at the end, on an error, on Ctrl-C and on SIGTERM.

It never touches a stack started by ``make up`` (different ports, prefix and folder). Exit code:
0 when the workflow completed, 1 when it did not, 130 on Ctrl-C.

    python -m devtools.demo [--run-dir DIR] [--plain] [--timeout S] [--keep]

(``--run-dir`` is the folder of all runs, default ``.run/demo``.)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devtools.azurite import Azurite, AzuriteError
from devtools.stackenv import read_env, source_line, write_env
from shared.signing import new_key_pair

if TYPE_CHECKING:
    from shared.client import Client

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"
DEFAULT_RUN_DIR = REPO_ROOT / ".run" / "demo"
PREFIX = "demo"
WORKERS = {"cpu": ["--concurrency", "2"], "gpu": ["--gpus", "0,1"]}
"""Queue -> extra worker options: 2 CPU slots; 2 fake GPUs, one per training run."""


class DemoError(RuntimeError):
    """A part of the demo stack did not start."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class DemoStack:
    """The processes the demo starts, and how to stop them all."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.azurite: Azurite | None = None
        self.processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.api_url = ""
        self.env: dict[str, str] = {}

    def stack_env(self) -> dict[str, str]:
        """What the CLI (``DAGQ_API_URL``) and a worker (storage, prefix, examples) need."""
        return {
            "DAGQ_API_URL": self.api_url,
            "DAGQ_STORAGE": self.env["DAGQ_STORAGE"],
            "DAGQ_PREFIX": self.env["DAGQ_PREFIX"],
            "DAGQ_EXAMPLES_DIR": str(EXAMPLES),
        }

    def start(self, say: Callable[..., Any] = print) -> None:
        log = say
        log("starting Azurite (local Azure Storage) ...")
        self.azurite = Azurite(location=self.run_dir / "azurite").start()
        self._record_pid(self.azurite.process.pid if self.azurite.process else None)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DAGQ_", "AzureWeb"))},
            "DAGQ_STORAGE": self.azurite.connection_string,
            "DAGQ_PREFIX": PREFIX,
            "DAGQ_SWEEP_SCHEDULE": "*/2 * * * * *",
            "DAGQ_RBAC_ENFORCE": "1",  # as Azure would (docs/storage.md "Permissions")
            "PYTHONUNBUFFERED": "1",
        }
        # This demo's own key pair: the app signs, the workers verify (shared.signing).
        signing_key, self.env["DAGQ_VERIFY_KEYS"] = new_key_pair()
        port = _free_port()
        log(f"starting the Functions app (local host) on port {port} ...")
        self._spawn(
            "host",
            [sys.executable, "-m", "devtools.localhost", "--builtin", "--port", str(port),
             "--settings", str(self.run_dir / "no-local-settings.json"), "--grace-s", "3"],
            {**self.env, "DAGQ_SIGNING_KEY": signing_key},
        )  # fmt: skip
        self.api_url = f"http://127.0.0.1:{port}"
        self._wait_healthy()
        for queue, extra in WORKERS.items():
            log(f"starting a worker agent for queue {queue!r} ...")
            worker_env = {
                **self.env,
                "DAGQ_EXAMPLES_DIR": str(EXAMPLES),
                "DAGQ_PUBLISH_DIR": str(self.run_dir / "published"),
                # Tasks inherit only what the worker names (worker_agent/task_env.py): without
                # this, publish wrote the model card into its attempt's folder, deleted after it.
                "DAGQ_WORKER_TASK_ENV": "DAGQ_PUBLISH_DIR",
                "DAGQ_WORKER_WORK_DIR": str(self.run_dir / "work" / queue),
                "DAGQ_WORKER_METADATA_URL": "",
                "DAGQ_WORKER_MAX_POLL_S": "0.5",
                # Report starts early, so the live view shows the 2-second runs as running.
                "DAGQ_WORKER_STARTED_AFTER_S": "0.5",
                # A fresh worker registry for the dashboard's Workers view.
                "DAGQ_WORKER_REGISTRY_S": "2",
            }
            self._spawn(f"worker-{queue}", [sys.executable, "-m", "worker_agent", queue, *extra],
                        worker_env)  # fmt: skip

    def _record_pid(self, pid: int | None) -> None:
        if pid is not None:
            with (self.run_dir / "pids").open("a") as handle:
                handle.write(f"{pid}\n")

    def _spawn(self, name: str, command: list[str], env: dict[str, str]) -> None:
        with (self.run_dir / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                command, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.processes.append((name, process))
        self._record_pid(process.pid)

    def _wait_healthy(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        host = self.processes[-1][1]
        while time.monotonic() < deadline:
            if host.poll() is not None:
                raise DemoError(f"the local host exited; see {self.run_dir / 'host.log'}")
            try:
                with urllib.request.urlopen(f"{self.api_url}/api/health", timeout=5) as answer:  # noqa: S310
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise DemoError(f"the API did not become healthy; see {self.run_dir / 'host.log'}")

    def stop(self) -> None:
        """Stop workers, then the host, then Azurite (each process group: SIGTERM, then SIGKILL)."""
        for _name, process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for _name, process in reversed(self.processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        self.processes.clear()
        if self.azurite is not None:
            self.azurite.stop()
            self.azurite = None


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C, so the same cleanup runs."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def save_results(client: Client, workflow_id: str, folder: Path) -> tuple[dict[str, Any], Path]:
    """Write every task's output (outputs.json) and log (logs/<task>.log) under ``folder``."""
    from shared.client.errors import ApiError

    folder.mkdir(parents=True, exist_ok=True)
    outputs = client.outputs(workflow_id)
    (folder / "outputs.json").write_text(json.dumps(outputs, indent=2) + "\n")
    logs = folder / "logs"
    logs.mkdir(exist_ok=True)
    for name in client.get(workflow_id).tasks:
        try:
            text = client.logs(workflow_id, name)
        except ApiError:
            continue  # skipped tasks never ran: no log
        (logs / f"{name}.log").write_text(text)
    return outputs, logs


def dashboard_url(api_url: str, workflow_id: str | None = None) -> str:
    """The dashboard of the API at ``api_url`` (``http://host:port``), at a run if given."""
    return f"{api_url}/api/ui" + (f"#/runs/{workflow_id}" if workflow_id else "")


def new_run_dir(base: Path) -> Path:
    """A new folder under ``base`` for one run, named after its UTC start (never an earlier
    run's)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    for n in itertools.count(1):
        folder = base / (stamp if n == 1 else f"{stamp}-{n}")
        with suppress(FileExistsError):
            folder.mkdir(parents=True)
            return folder
    raise AssertionError("unreachable")  # pragma: no cover


def write_stack_env(stack: DemoStack, path: Path) -> None:
    """``.run/demo/stack.env``: the kept stack for the CLI and workers in another shell."""
    write_env(path, stack.stack_env())


def forget_stack_env(stack: DemoStack, path: Path) -> None:
    """Remove ``path`` if it still names this stack (a later kept demo's is left alone)."""
    with suppress(OSError, ValueError):
        if read_env(path).get("DAGQ_API_URL") == stack.api_url:
            path.unlink()


def keep_up(say: Callable[..., Any], api_url: str, workflow_id: str, env_file: Path) -> None:
    """Keep the stack up until Ctrl-C (or SIGTERM, which ``sigterm_as_interrupt`` turns into it)."""
    say(f"dashboard: {dashboard_url(api_url, workflow_id)}", soft_wrap=True)
    say("the dagq CLI in another shell: load this stack's API URL, storage and prefix (and put"
        " dagq on PATH) with")  # fmt: skip
    say(f"  {source_line(env_file)}", soft_wrap=True, markup=False)
    say(f"the stack stays up (API {api_url}/api): Ctrl-C stops it")
    while True:
        time.sleep(3600)


def run_demo(base: Path, *, plain: bool, timeout_s: float, keep: bool = False) -> int:
    """One demo run in a new folder under ``base`` (earlier runs' folders are kept)."""
    from rich.console import Console

    from shared.cli import cost_render, render, style
    from shared.cli.follow import follow
    from shared.client import Client

    console = Console(force_terminal=False, width=120) if plain else Console()
    say = console.print
    started = time.monotonic()
    earlier = sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    run_dir = new_run_dir(base)
    env_file = base / "stack.env"
    say(f"this run's folder: {run_dir}", soft_wrap=True, markup=False)
    if earlier:
        say(f"{len(earlier)} earlier run(s) kept in {base} (make clean removes .run/)",
            soft_wrap=True, markup=False)  # fmt: skip
    stack = DemoStack(run_dir)
    code: int | None = None
    try:
        with sigterm_as_interrupt():
            stack.start(say)
            say(f"stack ready in {time.monotonic() - started:.1f} s: API {stack.api_url}/api")
            say(f"dashboard: {dashboard_url(stack.api_url)}", soft_wrap=True)
            if keep:
                write_stack_env(stack, env_file)
            with Client(stack.api_url) as client:
                submitted = client.submit_file(EXAMPLES / "pipeline.yaml")
                say(f"submitted examples/pipeline.yaml as workflow [bold]{submitted.id}[/bold]")
                final = follow(client, submitted.id, console=console, interval_s=0.5,
                               timeout_s=timeout_s)  # fmt: skip
                final = client.get(submitted.id)
                outputs, logs = save_results(client, submitted.id, run_dir)
                cost = client.workflow_cost(submitted.id)
            say("")
            say(render.status_view(final))
            say("")
            took = style.duration(render.elapsed_of(final, time.time()))
            say(f"outcome: workflow {final.id} [bold]{final.status}[/bold] in {took}")
            evaluation = outputs.get("evaluate")
            if isinstance(evaluation, dict):
                say(
                    f"best run: [bold]{evaluation.get('best')}[/bold] — test accuracy"
                    f" {evaluation.get('accuracy')} (lr {evaluation.get('lr')},"
                    f" {evaluation.get('epochs')} epochs)"
                )
            published = outputs.get("publish")
            if isinstance(published, dict):
                # One line, never wrapped: a path is copied, and a wrapped one names nothing.
                say(f"published model card: {published.get('card')}", soft_wrap=True, markup=False)
            elif "publish" in final.tasks:
                say(f"publish: {final.tasks['publish'].state} (its condition decided)")
            say("")
            say(f"cost (dagq cost {submitted.id}):")
            say(cost_render.render(cost))
            say(f"outputs: {run_dir / 'outputs.json'}", soft_wrap=True, markup=False)
            say(f"logs:    {logs}/<task>.log", soft_wrap=True, markup=False)
            say(
                f"in storage: container {PREFIX}-outputs, blobs {submitted.id}/<task>/<attempt>/"
                f" (Azurite data under {run_dir / 'azurite'})",
                soft_wrap=True,
                markup=False,
            )
            code = 0 if final.status == "completed" else 1
            if keep:
                keep_up(say, stack.api_url, submitted.id, env_file)
            say("next: make demo KEEP=1 keeps the stack up for the dagq CLI (README's Quickstart)")
            return code
    except KeyboardInterrupt:
        if code is not None:  # --keep: Ctrl-C is how the user ends it
            return code
        say("interrupted: stopping the demo stack ...")
        return 130
    except (DemoError, AzuriteError) as exc:
        say(f"[red]demo failed:[/red] {exc}")
        return 1
    except Exception as exc:  # report, never a traceback; the logs say more
        say(f"[red]demo failed:[/red] {type(exc).__name__}: {exc}")
        say(f"logs: {run_dir}/*.log", soft_wrap=True, markup=False)
        return 1
    finally:
        # Ignore a second Ctrl-C while cleaning up: a half-stopped stack helps nobody.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            forget_stack_env(stack, env_file)  # before the stop: it must not name a dead stack
            stack.stop()
        finally:
            signal.signal(signal.SIGINT, previous)
        say(f"stopped everything the demo started ({time.monotonic() - started:.0f} s in all)")
        if keep and code is not None:
            say(
                f"this demo's workflows stay in its Azurite data ({run_dir / 'azurite'}), but"
                " `make up` has storage of its own: they are not in it (each make demo starts"
                " afresh; its outputs, logs and model card are in the folder above)",
                soft_wrap=True,
                markup=False,
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.demo",
        description="Run dagq's demo: start a local stack, run examples/pipeline.yaml live,"
        " print the outcome, stop everything.",
    )
    parser.add_argument(
        "--run-dir",
        type=Path,
        default=DEFAULT_RUN_DIR,
        help="the folder of all demo runs: each run's logs, Azurite data and results go in a"
        " new folder in it, named after its start (default .run/demo)",
    )
    parser.add_argument(
        "--plain", action="store_true", help="plain progress lines, no live view (CI, logs)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="after the run, keep the stack up until Ctrl-C: write RUN_DIR/stack.env (for the"
        " dagq CLI: . .run/demo/stack.env) and print the dashboard URL",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=110.0,
        metavar="S",
        help="give up on the workflow after S seconds (default 110)",
    )
    args = parser.parse_args(argv)
    return run_demo(
        args.run_dir.resolve(), plain=args.plain, timeout_s=args.timeout, keep=args.keep
    )


if __name__ == "__main__":
    sys.exit(main())
