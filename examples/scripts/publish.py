"""Publish the best model (runs only when the evaluation passed: see the task's condition).

Usage: publish.py [--to DIR]
Writes a small model card (JSON) to DIR (default: the task's work directory) and outputs where.
A real pipeline would upload to a model registry here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from dagq_task import log, upstream, write_output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--to", default=".")
    args = parser.parse_args()

    result = upstream().get("evaluate")
    if not result:
        sys.exit("no evaluation result: this task needs the output of 'evaluate' (DAGQ_UPSTREAM)")
    card = {
        "model": "logistic-regression",
        "source_run": result["best"],
        "accuracy": result["accuracy"],
        "hyperparameters": {"lr": result["lr"], "epochs": result["epochs"]},
        "weights": result["weights"],
        "workflow": os.environ.get("DAGQ_WORKFLOW_ID"),
    }
    os.makedirs(args.to, exist_ok=True)
    path = os.path.abspath(os.path.join(args.to, "model-card.json"))
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(card, handle, indent=2)
    log(f"published {result['best']} (accuracy {result['accuracy']:.3f}) to {path}")
    write_output({"published": result["best"], "accuracy": result["accuracy"], "card": path})


if __name__ == "__main__":
    main()
