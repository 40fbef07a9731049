"""A PyTorch-style training run: model, optimizer, and the usual step (forward, loss, backward,
optimizer step), on the GPU when there is one.

Usage: train_step.py [--steps N] [--lr LR] [--backend auto|torch|python]
Reads the data set from the prep task's output (rows of x1, x2, label) and fits a logistic
regression. With torch installed (the pool's setup script builds /opt/envs/train) the step is
torch's, on ``cuda`` when CUDA is available; without it the same step runs in plain Python, so the
example also runs on a machine with neither a GPU nor torch. Outputs the first and final loss, the
device and the backend that ran.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from dagq_task import log, upstream, write_output


def torch_steps(rows: list[list[float]], steps: int, lr: float) -> dict[str, Any]:
    """The training loop as a PyTorch user writes it."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    data = torch.tensor(rows, dtype=torch.float32, device=device)
    features, labels = data[:, :2], data[:, 2:]
    model = torch.nn.Linear(2, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(features), labels)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    return {"first_loss": losses[0], "final_loss": losses[-1], "device": name, "backend": "torch"}


def python_steps(rows: list[list[float]], steps: int, lr: float) -> dict[str, Any]:
    """The same model and step without torch: forward, mean BCE loss, gradient, SGD update."""
    weights = [0.0, 0.0, 0.0]  # bias, w1, w2
    losses = []
    for _ in range(steps):
        grad, loss = [0.0, 0.0, 0.0], 0.0
        for x1, x2, y in rows:
            z = max(-60.0, min(60.0, weights[0] + weights[1] * x1 + weights[2] * x2))
            p = 1.0 / (1.0 + math.exp(-z))
            loss -= y * math.log(p + 1e-12) + (1 - y) * math.log(1 - p + 1e-12)
            for i, xi in enumerate((1.0, x1, x2)):
                grad[i] += (p - y) * xi
        weights = [w - lr * g / len(rows) for w, g in zip(weights, grad, strict=True)]
        losses.append(loss / len(rows))
    return {"first_loss": losses[0], "final_loss": losses[-1], "device": "cpu", "backend": "python"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--backend", choices=["auto", "torch", "python"], default="auto")
    args = parser.parse_args()
    data = upstream().get("prep")
    if not data:
        sys.exit("no data set: this task needs the output of the 'prep' task (DAGQ_UPSTREAM)")
    backend = args.backend
    if backend == "auto":
        try:
            import torch  # noqa: F401
        except ImportError:
            backend = "python"
        else:
            backend = "torch"
    log(f"{backend} training, {args.steps} steps, GPU: {os.environ.get('CUDA_VISIBLE_DEVICES')}")
    step = torch_steps if backend == "torch" else python_steps
    result = step(data["train"], args.steps, args.lr)
    log(f"loss {result['first_loss']:.4f} -> {result['final_loss']:.4f} on {result['device']}")
    write_output(result)


if __name__ == "__main__":
    main()
