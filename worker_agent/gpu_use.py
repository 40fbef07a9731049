"""Sample each GPU's utilisation and memory with ``nvidia-smi``, for the registry heartbeat.

Where ``nvidia-smi`` is not on PATH the worker reports no GPUs (and never looks again). A sample
that fails or takes longer than ``SAMPLE_TIMEOUT_S`` reports none this time: GPU use is advisory
and never holds up the heartbeat. Malformed lines are skipped; values are bounded by
``shared.storage.registry`` when they are written and read.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from contextlib import suppress

from shared.limits import MAX_GPUS
from shared.storage.registry import GpuUse

log = logging.getLogger(__name__)

QUERY = [
    "--query-gpu=index,utilization.gpu,memory.used,memory.total",
    "--format=csv,noheader,nounits",
]
SAMPLE_TIMEOUT_S = 5.0
MAX_OUTPUT_BYTES = 64 * 1024


def parse_gpu_lines(text: str) -> list[GpuUse]:
    """``nvidia-smi``'s CSV lines -> samples (``[N/A]`` or malformed lines are left out)."""
    out: list[GpuUse] = []
    for line in text.splitlines()[:MAX_GPUS]:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 4:
            continue
        try:
            index, util, used, total = int(fields[0]), *(float(f) for f in fields[1:])
        except ValueError:
            continue
        if 0 <= util <= 100 and 0 <= used <= total <= 1e9:
            out.append(GpuUse(index, util, used, total))
    return out


class GpuSampler:
    """Reads GPU use on demand; a no-op where ``nvidia-smi`` is absent."""

    def __init__(self, binary: str | None = None) -> None:
        self.binary = binary if binary is not None else shutil.which("nvidia-smi")

    async def sample(self) -> list[GpuUse]:
        if self.binary is None:
            return []
        try:
            process = await asyncio.create_subprocess_exec(
                self.binary, *QUERY,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
        except OSError as exc:
            log.info("nvidia-smi cannot run (%s): no GPU use is reported", exc)
            self.binary = None
            return []
        try:
            assert process.stdout is not None
            data = await asyncio.wait_for(_read_to_end(process.stdout), timeout=SAMPLE_TIMEOUT_S)
            await asyncio.wait_for(process.wait(), timeout=SAMPLE_TIMEOUT_S)
        except TimeoutError:
            log.warning("nvidia-smi took over %.0f s: no GPU use this time", SAMPLE_TIMEOUT_S)
            with suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            return []
        if process.returncode != 0:
            return []
        return parse_gpu_lines(data.decode("utf-8", errors="replace"))


async def _read_to_end(stream: asyncio.StreamReader) -> bytes:
    """Everything ``stream`` gives until its end, at most ``MAX_OUTPUT_BYTES`` (one ``read``
    returns only what has arrived so far: the lines written after a pause would be lost)."""
    data = b""
    while len(data) < MAX_OUTPUT_BYTES:
        chunk = await stream.read(MAX_OUTPUT_BYTES - len(data))
        if not chunk:
            break
        data += chunk
    return data
