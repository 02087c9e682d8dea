"""The pair's shapes, one model's optimisation schedule, and the training precision."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from specviz.engine.models.gpt import GPTConfig

TARGET = GPTConfig(n_layer=6, n_head=4, n_embd=256, block_size=512)
DRAFT = GPTConfig(n_layer=1, n_head=2, n_embd=128, block_size=512)
STORAGE_DTYPE = torch.float16  # shipped weights: half the bytes, well within fp16 range (std ≈ 0.02)
PRECISIONS = {"fp32": None, "bf16": torch.bfloat16}  #: training precision → autocast dtype (None: no autocast)
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")  #: /proc/cpuinfo flags of CPUs that run bf16 matmuls natively


@dataclass(frozen=True)
class TrainConfig:
    """One model's optimisation schedule."""

    steps: int  # optimiser steps
    batch_size: int = 16  # sequences per step
    seq_len: int = 512  # bytes per sequence
    lr: float = 1e-3  # peak learning rate (AdamW)
    min_lr: float = 1e-4  # cosine decay floor
    warmup: int = 100  # linear warm-up steps
    weight_decay: float = 0.1  # AdamW, on matrices only
    grad_clip: float = 1.0  # global-norm clip
    seed: int = 0  # data order and initialisation
    checkpoint_every: int = 50  # steps between resumable checkpoints
    eval_every: int = 0  # steps between held-out evaluations for the loss curve (0: none)
    micro_batches: int = 1  # forward/backward passes per step (gradient accumulation); divides batch_size
    precision: str = "fp32"  # "fp32", or "bf16": matmuls under torch.autocast, weights and AdamW in fp32

    def __post_init__(self):
        if self.micro_batches < 1 or self.batch_size % self.micro_batches:
            raise ValueError(
                f"micro_batches must be >= 1 and divide batch_size {self.batch_size}; got {self.micro_batches}"
            )
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}; got {self.precision!r}")


def native_bf16(cpuinfo: str | None = None) -> bool:
    """Whether ``/proc/cpuinfo``'s flags (or ``cpuinfo``) name AMX or AVX-512-BF16; False where unreadable.

    Elsewhere bf16 matmuls are emulated and slower than fp32, so ``auto`` precision picks fp32.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    flags = {f for line in cpuinfo.splitlines() if line.startswith("flags") for f in line.split(":", 1)[1].split()}
    return any(flag in flags for flag in BF16_CPU_FLAGS)


def auto_precision(precision: str) -> str:
    """``precision``, with "auto" resolved to "bf16" on a CPU with native bf16 and "fp32" elsewhere."""
    return ("bf16" if native_bf16() else "fp32") if precision == "auto" else precision
