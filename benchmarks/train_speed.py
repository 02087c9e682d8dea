"""Training throughput of the bundled target's shape on this CPU: tokens/s per recipe, against fp32.

Run from the repository root::

    python benchmarks/train_speed.py                   # every variant, 4 timed steps each
    python benchmarks/train_speed.py --steps 2 --variants fp32,bf16   # a quick look

Each variant trains ``specviz.engine.train.TARGET`` (the shipped target's shape; ``--shape L×D``
tries another, e.g. ``6x384``, the first bundled target's) from the same initialisation on the
same random windows of the standard library (``--batch`` sequences of ``--seq-len`` bytes per
optimiser step) and reports the median wall time of one optimiser step after ``--warmup`` untimed
steps, as tokens (bytes) per second and as a ratio to the fp32 baseline of the same run:

- ``fp32``: plain fp32, AdamW ``foreach`` (the recipe the first bundled pair was trained with);
- ``fp32+fused``: fp32 with AdamW ``fused=True``; ``fp32+fused+compile``: and ``torch.compile``;
- ``bf16``: the same under ``torch.autocast("cpu", torch.bfloat16)`` (AMX / AVX-512-BF16 matmuls
  where the CPU has them, emulated and much slower where it has not: ``train.native_bf16``);
- ``bf16+fused``: bf16 autocast with AdamW ``fused=True``;
- ``bf16+accum4``: bf16 with the step's batch split into 4 micro-batches (gradient accumulation);
- ``bf16+fused+accum4``: both;
- ``bf16+1thread``: bf16 on one torch thread;
- ``bf16+compile``: bf16 with the model wrapped in ``torch.compile`` (its compile time is printed
  apart; the timed steps run after it); ``bf16+fused+accum4+compile``: all of them.

Then a loss check: ``--loss-steps`` steps of fp32 and of bf16 from the same start on the same
windows; the mean |Δ| of their training losses (bits/byte) over the last half must be below
``--loss-tol``, else bf16 is not the same training.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import torch
from _report import chosen, machine_line, record, shape_config, summary

from specviz.engine import train
from specviz.engine.models.gpt import GPT, bits_per_byte

T0 = time.perf_counter()

VARIANTS = {
    "fp32": dict(precision="fp32"),
    "fp32+fused": dict(precision="fp32", fused=True),
    "fp32+fused+compile": dict(precision="fp32", fused=True, compile=True),
    "bf16": dict(precision="bf16"),
    "bf16+fused": dict(precision="bf16", fused=True),
    "bf16+accum4": dict(precision="bf16", micro_batches=4),
    "bf16+fused+accum4": dict(precision="bf16", fused=True, micro_batches=4),
    "bf16+1thread": dict(precision="bf16", threads=1),
    "bf16+compile": dict(precision="bf16", compile=True),
    "bf16+fused+accum4+compile": dict(precision="bf16", fused=True, micro_batches=4, compile=True),
}


def step_times(
    data: np.ndarray, args: argparse.Namespace, precision="fp32", fused=False, micro_batches=1, threads=0, compile=False
) -> tuple[list[float], float]:
    """Wall times of ``args.steps`` optimiser steps (after warm-up) and the compile time (0 if none)."""
    saved = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        torch.manual_seed(0)
        model = GPT(args.cfg).train()
        tc = train.TrainConfig(steps=1, batch_size=args.batch, seq_len=args.seq_len, micro_batches=micro_batches)
        opt = train.optimizer(model, tc, fused=fused)
        forward = torch.compile(model) if compile else model
        rng = np.random.default_rng(0)
        compile_s = 0.0
        if compile:
            t0 = time.perf_counter()
            train.train_step(forward, opt, data, tc, rng, precision)
            compile_s = time.perf_counter() - t0
        for _ in range(args.warmup):
            train.train_step(forward, opt, data, tc, rng, precision)
        times = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            train.train_step(forward, opt, data, tc, rng, precision)
            times.append(time.perf_counter() - t0)
        return times, compile_s
    finally:
        torch.set_num_threads(saved)


def loss_track(data: np.ndarray, args: argparse.Namespace, precision: str) -> list[float]:
    """Training loss (bits/byte) of each of ``args.loss_steps`` steps from seed 0 on fixed windows."""
    torch.manual_seed(0)
    model = GPT(args.cfg).train()
    tc = train.TrainConfig(steps=args.loss_steps, batch_size=args.batch, seq_len=args.seq_len, lr=1e-3, warmup=5)
    opt = train.optimizer(model, tc)
    rng = np.random.default_rng(0)
    losses = []
    for step in range(args.loss_steps):
        for group in opt.param_groups:
            group["lr"] = train.learning_rate(step, tc)
        losses.append(bits_per_byte(train.train_step(model, opt, data, tc, rng, precision)))
    return losses


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=4, help="timed optimiser steps per variant")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--batch", type=int, default=16, help="sequences per optimiser step")
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--shape", default="", help="layers x width, e.g. 6x384 (default: the shipped target's)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    p.add_argument("--loss-steps", type=int, default=40, help="steps of the fp32-vs-bf16 loss check (0: skip)")
    p.add_argument("--loss-tol", type=float, default=0.05, help="allowed mean |Δ loss| in bits/byte")
    args = p.parse_args()
    names = chosen(args.variants, VARIANTS, p)
    if "fp32" not in names:
        names.insert(0, "fp32")  # every ratio is against fp32 of the same run

    print(machine_line())
    args.cfg = shape_config(args.shape)
    print(f"model {args.cfg}, {GPT(args.cfg).num_params():,} parameters")
    train_files, _ = train.corpus_files()
    data = train.load_bytes(train_files)
    tokens = args.batch * args.seq_len
    print(f"step = {args.batch} × {args.seq_len} = {tokens:,} bytes; median of {args.steps} steps after {args.warmup}")
    rate = {}
    for name in names:
        times, compile_s = step_times(data, args, **VARIANTS[name])
        med = statistics.median(times)
        rate[name] = tokens / med
        extra = f", compile {compile_s:.0f} s" if compile_s else ""
        print(
            f"  {name:<14} {med:7.2f} s/step  {rate[name]:8,.0f} tokens/s  "
            f"{rate[name] / rate['fp32']:.2f}× fp32{extra}",
            flush=True,
        )
    best = max(rate, key=rate.get)
    record("fastest recipe vs fp32", f"{best}: {rate[best] / rate['fp32']:.2f}×", "(context)", None)

    if args.loss_steps:
        fp32, bf16 = loss_track(data, args, "fp32"), loss_track(data, args, "bf16")
        tail = slice(args.loss_steps // 2, None)
        diff = float(np.mean(np.abs(np.array(fp32[tail]) - np.array(bf16[tail]))))
        print(f"loss check over {args.loss_steps} steps: fp32 ends {fp32[-1]:.3f}, bf16 ends {bf16[-1]:.3f} bits/byte")
        record(
            "bf16 training loss = fp32's", f"mean |Δ| {diff:.3f} bits/byte", f"< {args.loss_tol}", diff < args.loss_tol
        )
    return summary(T0)


if __name__ == "__main__":
    sys.exit(main())
