"""examples/pipeline.yaml built in Python: CPU prep -> a matrix of "GPU" training runs -> CPU
evaluation (fan-in) -> conditional publish.

    python examples/pipeline.py            print the YAML (the same definition as pipeline.yaml)
    python examples/pipeline.py --submit   submit it and wait (DAGQ_API_URL, as the CLI)
"""

from __future__ import annotations

import sys

import dagq

SCRIPTS = '"${DAGQ_EXAMPLES_DIR:?set DAGQ_EXAMPLES_DIR to the examples folder}/scripts'


def build() -> dagq.Workflow:
    """The workflow of examples/pipeline.yaml."""
    wf = dagq.Workflow(
        "train-eval-publish",
        default_queue="cpu",
        default_task_timeout_s=300,
        env={"PYTHONUNBUFFERED": "1"},
    )
    prep = wf.task("prep", cmd=f'python3 {SCRIPTS}/prep.py" --rows 240 --seed 7')
    # 3 learning rates x 2 epoch budgets = 6 training runs on the gpu queue.
    train = wf.task(
        "train",
        cmd=f'python3 {SCRIPTS}/train.py" --lr {{{{ lr }}}} --epochs {{{{ epochs }}}} --seconds 2',
        queue="gpu",
        after=[prep],
        foreach={"lr": [0.2, 1.0, 4.0], "epochs": [10, 40]},
        retries=1,
        retry={"initial_delay_s": 1},
    )
    evaluate = wf.task(
        "evaluate", cmd=f'python3 {SCRIPTS}/evaluate.py" --min-accuracy 0.8', after=[train]
    )
    wf.task(
        "publish",
        cmd=f'python3 {SCRIPTS}/publish.py" --to "${{DAGQ_PUBLISH_DIR:-.}}"',
        after=[evaluate],
        condition=f"{evaluate.output('passed')} == true",
    )
    return wf


def main(argv: list[str]) -> int:
    wf = build()
    wf.validate()
    if "--submit" not in argv:
        print(wf.to_yaml(), end="")
        return 0
    with dagq.Client() as client:
        submitted = client.submit(wf)
        final = client.wait(submitted.id, on_update=lambda w: print(w.status, w.counts))
    print(final.status)
    return 0 if final.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
