"""GPU ids -> task slots: each slot owns a fixed, disjoint group of GPUs (CUDA_VISIBLE_DEVICES).

A slot runs one task at a time, so two running tasks never share a GPU. Static groups (rather than
a free list) also keep a slot on the same devices for its whole life, which makes logs and
``nvidia-smi`` readings easy to match to tasks.
"""

from __future__ import annotations

import shutil
import subprocess

from shared.errors import ConfigError, GpuDetectionError


def detect_gpus() -> list[str]:
    """GPU indices reported by ``nvidia-smi`` (for ``--gpus auto``)."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        raise GpuDetectionError(
            "--gpus auto: nvidia-smi is not on PATH; list the GPU ids instead (--gpus 0,1)"
        )
    try:
        result = subprocess.run(
            [binary, "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise GpuDetectionError(f"--gpus auto: nvidia-smi failed: {exc}") from None
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def slot_devices(
    gpus: list[str], gpus_per_task: int, concurrency: int | None
) -> tuple[int, list[str | None]]:
    """The number of slots and each slot's CUDA_VISIBLE_DEVICES (None: leave it inherited).

    Without GPUs every slot inherits the environment's value. With GPUs, the default concurrency is
    the number of whole groups, and asking for more slots than groups is an error (a slot without
    a GPU of its own would see every GPU).
    """
    if not gpus:
        slots = concurrency or 1
        return slots, [None] * slots
    if len(set(gpus)) != len(gpus):
        raise ConfigError(f"--gpus lists a GPU twice: {','.join(gpus)}")
    groups = len(gpus) // gpus_per_task
    if groups == 0:
        raise ConfigError(
            f"--gpus-per-task {gpus_per_task} is more than the {len(gpus)} GPU(s) given (--gpus)"
        )
    slots = concurrency or groups
    if slots > groups:
        raise ConfigError(
            f"--concurrency {slots} needs {slots * gpus_per_task} GPUs at {gpus_per_task} per "
            f"task, but --gpus gives {len(gpus)}: lower --concurrency or give more GPUs"
        )
    return slots, [
        ",".join(gpus[i * gpus_per_task : (i + 1) * gpus_per_task]) for i in range(slots)
    ]


def slot_plan(gpus: list[str], gpus_per_task: int, concurrency: int | None) -> list[str | None]:
    """Each slot's CUDA_VISIBLE_DEVICES, with ``gpus == ['auto']`` asking nvidia-smi."""
    ids = detect_gpus() if gpus == ["auto"] else gpus
    return slot_devices(ids, gpus_per_task, concurrency)[1]
