"""Message signing benchmark: what the app's signature costs per task message (shared.signing).

Every figure is measured in this one run (best of 3 rounds of N messages, wall clock), on a
typical task message (a 200-byte command, a few env values, two upstream refs):

- sign_us: the coordinator signing one task message (canonical JSON + Ed25519 sign);
- verify_us: a worker checking one (canonical JSON + Ed25519 verify), as it does before the claim;
- encode_us: encoding the same message for the queue, unsigned (what dispatch paid before);
- sign_ratio: sign_us / encode_us, the signature's cost against the encoding it rides with.

Ends with ONE line of key=value pairs. Usage: python bench/bench_signing.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shared.messages import OutputRef, TaskMessage, encode
from shared.signing import Signer, new_key_pair, verifier_of

N = 2000


def per_call_us(fn: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(N):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / N * 1e6


def main() -> None:
    private, public = new_key_pair()
    signer, verifier = Signer(private), verifier_of(public)
    assert verifier is not None
    message = TaskMessage(
        workflow_id="20261204-050000-abcdef",
        task="train.lr=0.1",
        attempt=1,
        queue="gpu",
        cmd="python train.py --data /data/set --epochs 40 --lr 0.1 " + "x" * 150,
        env={"SEED": "7", "WANDB_MODE": "offline", "RUN": "lr-0.1"},
        upstream={"prep": OutputRef(inline={"rows": 10_000}), "split": OutputRef(inline=[1, 2])},
        incarnation=123456789,
        run=1,
    )
    signed = signer.sign(message)
    sign_us = per_call_us(lambda: signer.sign(message))
    verify_us = per_call_us(lambda: verifier.check(signed))
    encode_us = per_call_us(lambda: encode(message))
    print(
        f"sign_us={sign_us:.1f} verify_us={verify_us:.1f} encode_us={encode_us:.1f}"
        f" sign_ratio={sign_us / encode_us:.2f} bytes_signed={len(encode(signed))}"
        f" bytes_unsigned={len(encode(message))}"
    )


if __name__ == "__main__":
    main()
