"""Every documented line that loads the azd environment exports it, so the `dagq` CLI and a
worker started afterwards see it (issue 35: `eval "$(azd env get-values)"` alone set shell
variables the CLI never saw, and it talked to the local default instead). Each such line of the
README, infra/README.md and the quickstart runs against a stub `azd`. The quickstart's other shell
lines (issue 35 item 3: its section 5 could not be finished as written) run against stubs too: the
wheel build, the setup script (with a real clone of this repository), the training run's cpu
worker and the teardown."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "infra/README.md", "docs/azure-gpu-quickstart.md"]


def loading_lines() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for line in (REPO / doc).read_text().splitlines():
            match = re.search(r"(set -a; )?eval \"\$\(azd env get-values\)\"(; set \+a)?", line)
            if match:
                found.append((doc, match.group(0)))
    return found


@pytest.mark.parametrize(("doc", "line"), loading_lines())
def test_the_azd_environment_reaches_the_programs_started_after(
    doc: str, line: str, tmp_path: Path
) -> None:
    stub = tmp_path / "azd"
    stub.write_text("#!/bin/sh\necho 'DAGQ_API_URL=\"https://dagq.example.net\"'\n")
    stub.chmod(0o755)
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}"}
    script = f"{line}\nsh -c 'echo \"$DAGQ_API_URL\"'"
    seen = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=True)
    assert seen.stdout.strip() == "https://dagq.example.net", f"{doc}: {line}"


QUICKSTART = REPO / "docs" / "azure-gpu-quickstart.md"


def _blocks(heading: str) -> list[str]:
    """The ``sh`` blocks of the quickstart's section under ``heading`` (to its next heading)."""
    text = QUICKSTART.read_text()
    start = text.index(heading)
    end = text.find("\n##", start + len(heading))  # a heading; a "# comment" in a block is not
    return re.findall(r"```sh\n(.*?)```", text[start : end if end > 0 else None], re.S)


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _stubs(tmp_path: Path) -> tuple[Path, Path]:
    """``azd`` (its environment: an account, a prefix, a key), ``dagq`` and ``dagq-worker`` that
    record how they were called in ``calls.log``; returns (bin folder, log)."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    _stub(
        bin_dir,
        "azd",
        f"""if [ "$1 $2" = "env get-values" ]; then
  echo 'DAGQ_STORAGE_ACCOUNT="stdagq1"'; echo 'DAGQ_PREFIX="dagq"'; echo 'DAGQ_VERIFY_KEYS="k1"'
  echo 'DAGQ_API_URL="https://dagq.example.net"'; exit 0
fi
echo "azd $*" >> {calls}""",
    )
    _stub(
        bin_dir,
        "dagq-worker",
        f"""trap 'echo "worker stopped" >> {calls}; exit 0' TERM
echo "worker $* examples=$DAGQ_EXAMPLES_DIR keys=$DAGQ_VERIFY_KEYS \\
client=${{AZURE_CLIENT_ID:-}}" >> {calls}
while :; do sleep 0.1; done""",
    )
    # submit waits until the worker has started (it is in the background), as a real one would
    # take its tasks only then.
    _stub(
        bin_dir,
        "dagq",
        f"""echo "dagq $*" >> {calls}
if [ "$1" = submit ]; then
  test -f "$2" || {{ echo "no such file: $2" >&2; exit 2; }}
  i=0; until grep -q '^worker' {calls} || [ $i -gt 300 ]; do sleep 0.1; i=$((i+1)); done
  echo wf-1
fi""",
    )
    return bin_dir, calls


def test_the_quickstart_training_run_and_teardown_run_as_written(tmp_path: Path) -> None:
    """Section 5 (a cpu worker on this machine, the cpu queue only, as the signed-in user) and
    the teardown, run line by line against stubs of azd, dagq and dagq-worker."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "examples").symlink_to(REPO / "examples")
    bin_dir, calls = _stubs(tmp_path)
    script = "set -eu\n" + "\n".join(
        _blocks("## 5. A training run") + _blocks("### Tear it all down")
    )
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path / "work", env=env, capture_output=True, text=True,
        check=False, timeout=60,
    )  # fmt: skip
    log = calls.read_text().splitlines() if calls.exists() else []
    assert done.returncode == 0, (done.stderr, log)
    worker = next(line for line in log if line.startswith("worker "))
    examples = tmp_path / "work" / "examples"
    # The cpu queue only (never gpu: the pool's), the deployment's account, prefix and keys, no
    # managed identity's client id (a laptop has none: `az login` is who it is).
    assert (
        worker == f"worker cpu --account stdagq1 --prefix dagq examples={examples} keys=k1 client="
    )
    assert "dagq submit examples/train-step.yaml" in log
    assert {"dagq watch wf-1", "dagq logs wf-1 train", "azd down --purge --force"} <= set(log)
    # What the cpu tasks of train-step run is there for that worker.
    needed = re.findall(
        r"DAGQ_EXAMPLES_DIR[^}]*}/([\w/.]+)", (examples / "train-step.yaml").read_text()
    )
    assert needed
    assert all((examples / path).is_file() for path in needed), needed


def test_the_documented_wheel_build_is_pip_wheel(tmp_path: Path) -> None:
    """The VMs' worker package is built with ``pip wheel . --no-deps`` (``python -m build`` is
    not installed by ``make install``) in the quickstart and infra/README.md."""
    for doc in (QUICKSTART, REPO / "infra" / "README.md"):
        text = doc.read_text()
        assert "python -m build" not in text, doc
        assert "pip wheel . --no-deps" in text.replace("\n", " "), doc
    bin_dir, calls = _stubs(tmp_path)
    _stub(bin_dir, "pip", f'echo "pip $*" >> {calls}')
    line = next(x for x in _blocks("## 2. Add the GPU pool")[0].splitlines() if "pip wheel" in x)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, check=True)
    assert calls.read_text() == "pip wheel . --no-deps -w dist\n"


def test_the_setup_script_clones_what_train_step_runs(tmp_path: Path) -> None:
    """Section 3's setup script, written as documented (the clone URL from this checkout) and run
    with its folders under a scratch root: the clone has train-step's scripts where
    DAGQ_EXAMPLES_DIR says they are."""
    bin_dir, calls = _stubs(tmp_path)
    git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True)
    _stub(
        bin_dir,
        "git",
        f"""if [ "$1 $2" = "remote get-url" ]; then echo "file://{REPO}"; exit 0; fi
exec {git.stdout.strip()} "$@\"""",
    )
    block = next(b for b in _blocks("## 3. Your code and its environment") if "setup.sh" in b)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path)}
    subprocess.run(["bash", "-c", block], cwd=tmp_path, env=env, check=True, capture_output=True)
    assert "azd provision" in calls.read_text()
    root = tmp_path / "root"
    (root / "etc" / "dagq").mkdir(parents=True)
    setup = (tmp_path / "setup.sh").read_text()
    setup = setup.replace("/opt/", f"{root}/opt/").replace("/etc/dagq/", f"{root}/etc/dagq/")
    # python3 -m venv and pip install torch: stand-ins (no network here).
    _stub(
        bin_dir,
        "python3",
        'mkdir -p "$3/bin" && printf "#!/bin/sh\\n" > "$3/bin/pip" && chmod +x "$3/bin/pip"',
    )
    subprocess.run(["bash", "-c", setup], env=env, check=True, capture_output=True)
    worker_env = (root / "etc" / "dagq" / "worker.env").read_text()
    examples = root / "opt" / "code" / "examples"  # /opt/code/examples on the VM
    assert worker_env == f'DAGQ_EXAMPLES_DIR="{examples}"\n'
    train_step = yaml.safe_load((examples / "train-step.yaml").read_text())
    for task in train_step["tasks"]:
        for path in re.findall(r"DAGQ_EXAMPLES_DIR[^}]*}/([\w/.]+)", task["kwargs"]["cmd"]):
            assert (examples / path).is_file(), (task["name"], path)
