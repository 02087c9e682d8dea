"""Why the first bundled target trained badly: short runs of the target's shape, one change at a time.

Run from the repository root (each variant trains from scratch; about 15 minutes per variant at the
default 300 steps on a quiet 2-core CPU)::

    python benchmarks/train_ablation.py
    python benchmarks/train_ablation.py --steps 120 --variants first,scaled   # a quick look

Every variant trains ``specviz.engine.train.TARGET`` (the shipped target's shape; ``--shape 6x384``
for the first one's) with the same data order (seed 0), fused AdamW and the precision
``train --precision auto`` picks (bf16 autocast where the CPU has native bf16, else fp32), and evaluates held-out bits/byte every ``--eval-every`` steps on
fixed windows of the held-out files (``train.evaluate``, 4 × 8 windows of 512 bytes):

- ``first``: the first recipe — every matrix at std 0.02, peak lr 1e-3, warm-up 100, 16 × 512 bytes;
- ``scaled``: the GPT-2 initialisation the model now has (the two projections into the residual
  stream at 0.02 / √(2 · 6)), otherwise ``first``;
- ``scaled-lr2e-3``: ``scaled`` at peak lr 2e-3;
- ``scaled-32x256``: ``scaled`` with 32 windows of 256 bytes per step (the same bytes per step).

It prints the held-out curve of each and the first step at which it is below ``--plateau`` bits/byte
(the first recipe sat near the byte-bigram level, about 3.3 bits/byte, for hundreds of steps).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
import torch
from _report import chosen, machine_line, record, shape_config, summary

from specviz.engine import train
from specviz.engine.models.gpt import GPT, bits_per_byte

T0 = time.perf_counter()

VARIANTS = {
    "first": dict(scaled=False, lr=1e-3, batch=16, seq=512),
    "scaled": dict(scaled=True, lr=1e-3, batch=16, seq=512),
    "scaled-lr2e-3": dict(scaled=True, lr=2e-3, batch=16, seq=512),
    "scaled-32x256": dict(scaled=True, lr=1e-3, batch=32, seq=256),
}


def run(variant: dict, cfg, steps: int, eval_every: int, data: np.ndarray, val: np.ndarray) -> list[tuple[int, float]]:
    """Held-out bits/byte every ``eval_every`` steps of one variant of shape ``cfg``, from seed 0."""
    torch.manual_seed(0)
    model = GPT(cfg)
    if not variant["scaled"]:  # the first recipe: the residual projections at the same std as the rest
        with torch.no_grad():
            for blk in model.blocks:
                blk.attn.proj.weight.normal_(0.0, 0.02)
                blk.mlp[2].weight.normal_(0.0, 0.02)
    tc = train.TrainConfig(
        steps=steps,
        batch_size=variant["batch"],
        seq_len=variant["seq"],
        lr=variant["lr"],
        precision=train.auto_precision("auto"),
    )
    opt = train.optimizer(model.train(), tc)
    rng = np.random.default_rng(tc.seed)
    curve = []
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = train.learning_rate(step, tc)
        loss = train.train_step(model, opt, data, tc, rng)
        if (step + 1) % eval_every == 0:
            curve.append((step + 1, train.evaluate(model, val, batches=4)))
            print(f"    step {step + 1}: train {bits_per_byte(loss):.3f}, held-out {curve[-1][1]:.3f}", flush=True)
    return curve


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--shape", default="", help="layers x width, e.g. 6x384 (default: the shipped target's)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    p.add_argument("--plateau", type=float, default=3.0, help="bits/byte that marks leaving the bigram plateau")
    args = p.parse_args()
    names = chosen(args.variants, VARIANTS, p)
    print(machine_line(f"torch {torch.__version__}, {torch.get_num_threads()} threads"))
    cfg = shape_config(args.shape)
    print(f"model {cfg}, {GPT(cfg).num_params():,} parameters, {train.auto_precision('auto')}", flush=True)
    train_files, val_files = train.corpus_files()
    data, val = train.load_bytes(train_files), train.load_bytes(val_files)
    curves = {}
    for name in names:
        print(f"  {name}: {VARIANTS[name]}", flush=True)
        curves[name] = run(VARIANTS[name], cfg, args.steps, args.eval_every, data, val)
    print(f"\n  held-out bits/byte at step {'':<10}" + "".join(f"{s:>8}" for s, _ in next(iter(curves.values()))))
    for name, curve in curves.items():
        print(f"  {name:<36}" + "".join(f"{b:8.3f}" for _, b in curve))
    for name, curve in curves.items():
        below = next((s for s, b in curve if b < args.plateau), math.inf)
        shown = f"step {below}" if below < math.inf else f"not within {args.steps} steps"
        record(f"{name}: below {args.plateau} bits/byte", shown, "(context)", None)
    return summary(T0)


if __name__ == "__main__":
    sys.exit(main())
