""" "GPU" training: logistic regression by gradient descent, in plain Python.

Usage: train.py --lr LR --epochs N [--seconds S]
Reads the data set from the prep task's output, trains, and outputs its test accuracy. It uses
the GPU the worker assigned (CUDA_VISIBLE_DEVICES) only to say which one it would have used;
``--seconds`` stretches the run so the live view has something to show.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

from dagq_task import log, upstream, write_output


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def accuracy(weights: list[float], rows: list[list[float]]) -> float:
    hits = 0
    for x1, x2, y in rows:
        predicted = 1 if sigmoid(weights[0] + weights[1] * x1 + weights[2] * x2) > 0.5 else 0
        hits += predicted == y
    return hits / len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()

    data = upstream().get("prep")
    if not data:
        sys.exit("no data set: this task needs the output of the 'prep' task (DAGQ_UPSTREAM)")
    train, test = data["train"], data["test"]
    device = os.environ.get("CUDA_VISIBLE_DEVICES") or "none (CPU)"
    log(f"training lr={args.lr} epochs={args.epochs} on {len(train)} rows, GPU: {device}")

    weights = [0.0, 0.0, 0.0]
    pause = args.seconds / max(args.epochs, 1)
    loss = 0.0
    for epoch in range(1, args.epochs + 1):
        grad = [0.0, 0.0, 0.0]
        loss = 0.0
        for x1, x2, y in train:
            p = sigmoid(weights[0] + weights[1] * x1 + weights[2] * x2)
            loss -= y * math.log(p + 1e-12) + (1 - y) * math.log(1 - p + 1e-12)
            for i, xi in enumerate((1.0, x1, x2)):
                grad[i] += (p - y) * xi
        weights = [w - args.lr * g / len(train) for w, g in zip(weights, grad, strict=True)]
        loss /= len(train)
        if epoch == 1 or epoch % max(args.epochs // 4, 1) == 0:
            log(f"epoch {epoch}/{args.epochs} loss={loss:.4f}")
        time.sleep(pause)

    acc = accuracy(weights, test)
    log(f"test accuracy {acc:.3f}")
    write_output(
        {
            "lr": args.lr,
            "epochs": args.epochs,
            "accuracy": round(acc, 4),
            "loss": round(loss, 4),
            "weights": [round(w, 4) for w in weights],
        }
    )


if __name__ == "__main__":
    main()
