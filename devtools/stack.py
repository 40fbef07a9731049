"""The local dagq stack in the background: `make up` / `make down` (python -m devtools.stack).

``up`` starts, each in its own process group with its log under ``.run/``:

1. Azurite, persisted under ``.run/azurite`` (ports 10000-10002, or free ones when those are taken);
2. the Functions app through ``python -m devtools.localhost`` (``func start`` where Core Tools are
   installed) on port 7071, or a free port (``--instances N``: N app processes, as Functions
   scales out; ``DAGQ_PARTITIONS`` from the environment sets the partitions);
3. worker agents for the queues ``cpu`` and ``gpu`` (``python -m worker_agent``), when the
   worker_agent package is present;

then waits until ``/api/health`` answers 200, prints the API URL and writes ``.run/stack.env``
(``DAGQ_API_URL``, ``DAGQ_STORAGE_CONNECTION_STRING``, ``DAGQ_STORAGE``, ``DAGQ_PREFIX``,
``DAGQ_PARTITIONS``) for
``source``-ing or for the CLI. What it started is recorded in ``.run/stack.json``: ``up`` again
finds the stack healthy and does nothing (a partly dead stack is stopped and started afresh; the
data persists), and ``down`` stops exactly those processes — checked by their command line, so a
recycled pid is never signalled.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from devtools.azurite import _LISTENING, account_env, azurite_binary, new_account_key
from devtools.stackenv import source_line, write_env, write_private
from shared.settings import azurite_connection_string
from shared.signing import new_key_pair

REPO_ROOT = Path(__file__).resolve().parent.parent
RUN_DIR = Path(os.environ.get("DAGQ_RUN_DIR") or REPO_ROOT / ".run").resolve()
"""Where the stack keeps its state, logs and Azurite data (DAGQ_RUN_DIR overrides, for tests)."""
STATE_FILE = RUN_DIR / "stack.json"
ENV_FILE = RUN_DIR / "stack.env"
AZURITE_PORTS = (10000, 10001, 10002)
API_PORT = 7071
WORKER_QUEUES = {"cpu": 4, "gpu": 2}
"""Queue -> task slots of the local worker started for it."""


class StackError(RuntimeError):
    """A part of the stack did not start."""


@dataclass
class Process:
    name: str
    pid: int
    marker: str
    """A string of its command line: a pid reused by another program is never signalled."""
    log: str


@dataclass
class Stack:
    api_url: str
    connection_string: str
    prefix: str
    processes: list[Process] = field(default_factory=list)
    partitions: int = 1
    """DAGQ_PARTITIONS of the stack (from the environment of ``up``)."""

    def save(self) -> None:
        write_private(STATE_FILE, json.dumps(asdict(self), indent=2) + "\n")
        write_env(
            ENV_FILE,
            {
                "DAGQ_API_URL": self.api_url,
                "DAGQ_STORAGE_CONNECTION_STRING": self.connection_string,
                "DAGQ_STORAGE": self.connection_string,
                "DAGQ_PREFIX": self.prefix,
                "DAGQ_PARTITIONS": str(self.partitions),
            },
        )

    @classmethod
    def load(cls) -> Stack | None:
        if not STATE_FILE.exists():
            return None
        try:
            data = json.loads(STATE_FILE.read_text())
            data["processes"] = [Process(**p) for p in data.get("processes", [])]
            return cls(**data)
        except (ValueError, TypeError):
            return None


# -- processes -------------------------------------------------------------------------------------


_children: dict[int, subprocess.Popen[bytes]] = {}
"""Processes started by this invocation: polled directly (their command line is the parent's
until they exec, so the marker check would misfire right after the start)."""


def is_running(proc: Process) -> bool:
    child = _children.get(proc.pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(proc.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # someone else's process now: not ours
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    if cmdline.exists():
        try:
            command = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return False
        if proc.marker not in command:
            return False
        status = Path(f"/proc/{proc.pid}/stat").read_text().split()
        return len(status) < 3 or status[2] != "Z"
    return True


def stop_process(proc: Process, timeout_s: float = 15.0) -> None:
    """SIGTERM the process group of ``proc``; SIGKILL it if it outlives ``timeout_s``."""
    if not is_running(proc):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_running(proc):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def spawn(name: str, command: list[str], marker: str, env: dict[str, str]) -> Process:
    """Start ``command`` detached (its own session), output appended to ``.run/{name}.log``."""
    log_path = RUN_DIR / f"{name}.log"
    with log_path.open("a") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command[:4])} ...\n")
        log.flush()
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    _children[process.pid] = process
    return Process(name=name, pid=process.pid, marker=marker, log=str(log_path))


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# -- the pieces ------------------------------------------------------------------------------------


def start_azurite(
    env: dict[str, str], any_ports: bool = False, timeout_s: float = 30.0
) -> tuple[Process, str]:
    use_defaults = not any_ports and all(port_free(p) for p in AZURITE_PORTS)
    ports = AZURITE_PORTS if use_defaults else (0, 0, 0)
    location = RUN_DIR / "azurite"
    location.mkdir(parents=True, exist_ok=True)
    log_path = RUN_DIR / "azurite.log"
    offset = log_path.stat().st_size if log_path.exists() else 0
    command = [
        azurite_binary(), "--silent", "--disableTelemetry", "--skipApiVersionCheck",
        "--blobHost", "127.0.0.1", "--queueHost", "127.0.0.1", "--tableHost", "127.0.0.1",
        "--blobPort", str(ports[0]), "--queuePort", str(ports[1]), "--tablePort", str(ports[2]),
        "--location", str(location),
    ]  # fmt: skip
    key = new_account_key()  # this stack's own: never the published development key
    proc = spawn("azurite", command, "azurite", {**env, **account_env(key)})
    bound: dict[str, int] = {}
    deadline = time.monotonic() + timeout_s
    while len(bound) < 3:
        if time.monotonic() > deadline or not is_running(proc):
            stop_process(proc)
            raise StackError(f"Azurite did not start; see {log_path}")
        with log_path.open() as log:
            log.seek(offset)
            for match in _LISTENING.finditer(log.read()):
                bound[match.group(1).lower()] = int(match.group(2))
        time.sleep(0.1)
    conn = azurite_connection_string(
        blob=bound["blob"], queue=bound["queue"], table=bound["table"], key=key
    )
    return proc, conn


def wait_healthy(url: str, proc: Process, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        if not is_running(proc):
            raise StackError(f"the local host exited; see {proc.log}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as response:  # noqa: S310
                if response.status == 200:
                    return
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.3)
    raise StackError(f"{url}/health did not answer 200 ({last}); see {proc.log}")


def healthy(stack: Stack) -> bool:
    if not all(is_running(p) for p in stack.processes):
        return False
    try:
        with urllib.request.urlopen(f"{stack.api_url}/health", timeout=5) as response:  # noqa: S310
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def up(prefix: str, api_port: int = API_PORT, any_ports: bool = False, instances: int = 1) -> Stack:
    """Start the stack (or find it running) and return it."""
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    current = Stack.load()
    if current is not None:
        if healthy(current):
            return current
        down(quiet=True)  # partly dead: start afresh (Azurite's data persists)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGQ_STORAGE")}
    started: list[Process] = []
    try:
        azurite, conn = start_azurite(env, any_ports)
        started.append(azurite)
        env.update(
            DAGQ_STORAGE=conn,
            DAGQ_PREFIX=prefix,
            DAGQ_SWEEP_SCHEDULE=os.environ.get("DAGQ_SWEEP_SCHEDULE", "*/2 * * * * *"),
            # Azurite grants everyone everything: the app and the workers refuse what infra/'s
            # roles would refuse on Azure (docs/storage.md "Permissions").
            DAGQ_RBAC_ENFORCE=os.environ.get("DAGQ_RBAC_ENFORCE", "1"),
            # Notifications (issue 29): the local stack's webhooks may be on this machine.
            DAGQ_NOTIFY_ALLOW_PRIVATE=os.environ.get("DAGQ_NOTIFY_ALLOW_PRIVATE", "1"),
            DAGQ_NOTIFY_ALLOW_HTTP=os.environ.get("DAGQ_NOTIFY_ALLOW_HTTP", "1"),
            AzureWebJobsStorage=conn,
            FUNCTIONS_WORKER_RUNTIME="python",
            PYTHONUNBUFFERED="1",
        )
        # A key pair of this stack's own: the app signs task messages and control events, the
        # workers run only what it signed (shared.signing); only the app gets the private key.
        signing_key, env["DAGQ_VERIFY_KEYS"] = new_key_pair()
        env.pop("DAGQ_SIGNING_KEY", None)
        port = api_port if api_port and not any_ports and port_free(api_port) else free_port()
        host = spawn(
            "host",
            [
                sys.executable,
                "-m",
                "devtools.localhost",
                "--port",
                str(port),
                "--instances",
                str(instances),
            ],
            "devtools.localhost",
            {"DAGQ_PUBLIC_URL": f"http://127.0.0.1:{port}", **env, "DAGQ_SIGNING_KEY": signing_key},
        )
        started.append(host)
        api_url = f"http://127.0.0.1:{port}/api"
        wait_healthy(api_url, host)
        if (REPO_ROOT / "worker_agent" / "__main__.py").exists():
            # The example pipeline's tasks find their scripts through this variable.
            examples = os.environ.get("DAGQ_EXAMPLES_DIR") or str(REPO_ROOT / "examples")
            # No Azure Scheduled Events off a VM: the local stack contacts 127.0.0.1 only.
            worker_env = {"DAGQ_WORKER_METADATA_URL": "", **env, "DAGQ_EXAMPLES_DIR": examples}
            for queue, slots in WORKER_QUEUES.items():
                work_dir = RUN_DIR / "work" / queue
                work_dir.mkdir(parents=True, exist_ok=True)
                command = [
                    sys.executable, "-m", "worker_agent", queue, "--concurrency", str(slots),
                    "--work-dir", str(work_dir), "--worker-id", f"local-{queue}",
                ]  # fmt: skip
                started.append(spawn(f"worker-{queue}", command, "worker_agent", worker_env))
        partitions = int(env.get("DAGQ_PARTITIONS") or 1)
        stack = Stack(api_url=api_url, connection_string=conn, prefix=prefix, processes=started,
                      partitions=partitions)  # fmt: skip
        time.sleep(0.5)
        dead = [p.name for p in started if not is_running(p)]
        if dead:
            raise StackError(f"{', '.join(dead)} exited at start; see .run/<name>.log")
        stack.save()
        return stack
    except BaseException:
        for proc in reversed(started):
            stop_process(proc)
        raise


def down(quiet: bool = False) -> list[str]:
    """Stop everything ``up`` started (workers first, Azurite last); return what was stopped."""
    stack = Stack.load()
    stopped = []
    if stack is not None:
        for proc in reversed(stack.processes):
            if is_running(proc):
                stop_process(proc)
                stopped.append(proc.name)
    for path in (STATE_FILE, ENV_FILE):
        path.unlink(missing_ok=True)
    if not quiet:
        print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.stack",
        description="Start (up) or stop (down) the local dagq stack: Azurite, the Functions app"
        " and cpu/gpu worker agents, in the background with logs under .run/.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("up", help="start the stack (harmless when it already runs)")
    start.add_argument("--prefix", default=os.environ.get("DAGQ_PREFIX", "dagq"),
                       help="resource prefix (default: $DAGQ_PREFIX or dagq)")  # fmt: skip
    start.add_argument("--port", type=int, default=API_PORT,
                       help="API port (default 7071; a free one if taken)")  # fmt: skip
    start.add_argument("--any-ports", action="store_true",
                       help="free ports for everything (side-by-side stacks, tests)")  # fmt: skip
    start.add_argument("--instances", type=int, default=1,
                       help="instances of the app (separate processes), as Functions scales"
                       " out (default 1)")  # fmt: skip
    sub.add_parser("down", help="stop what `up` started")
    sub.add_parser("status", help="show what runs")
    args = parser.parse_args(argv)
    if args.command == "down":
        down()
        return 0
    if args.command == "status":
        stack = Stack.load()
        if stack is None:
            print("not running")
            return 1
        for proc in stack.processes:
            state = "running" if is_running(proc) else "STOPPED"
            print(f"{proc.name:12} pid {proc.pid:<8} {state:8} log {proc.log}")
        print(f"API: {stack.api_url}")
        return 0 if healthy(stack) else 1
    try:
        stack = up(args.prefix, args.port, args.any_ports, args.instances)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"dagq is up: API {stack.api_url}")
    print(f"  environment: {source_line(ENV_FILE)}")
    print(f"  logs: {RUN_DIR}/*.log    stop: make down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
