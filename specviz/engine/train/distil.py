"""Distillation: the target's top-k next-byte probabilities on fixed windows, and the loss against them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from specviz.engine.models.gpt import GPT
from specviz.engine.train.config import PRECISIONS


@dataclass(frozen=True)
class Teacher:
    """The target's top-k next-byte probabilities on fixed windows of the training text, computed once."""

    tokens: np.ndarray  # (W, T + 1) uint8: window w's bytes
    top_p: np.ndarray  # (W, T, k) float16: p of the k likeliest next bytes at each position
    top_i: np.ndarray  # (W, T, k) uint8: which bytes those are

    def batch(
        self, batch_size: int, rng: np.random.Generator
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``batch_size`` random windows: inputs (B, T), next bytes (B, T), top_p (B, T, k), top_i (B, T, k)."""
        rows = rng.integers(0, len(self.tokens), size=batch_size)
        w = torch.from_numpy(self.tokens[rows].astype(np.int64))
        p = torch.from_numpy(self.top_p[rows].astype(np.float32))
        return w[:, :-1], w[:, 1:], p, torch.from_numpy(self.top_i[rows].astype(np.int64))

    def save(self, path: Path) -> None:
        """One ``.npz`` (no pickle)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, tokens=self.tokens, top_p=self.top_p, top_i=self.top_i)

    @classmethod
    def load(cls, path: Path) -> Teacher:
        with np.load(path, allow_pickle=False) as z:
            return cls(z["tokens"], z["top_p"], z["top_i"])


@dataclass(frozen=True)
class DistilConfig:
    """How a draft learns from the target: its top-k next-byte probabilities on fixed windows."""

    windows: int = 8000  # training windows the target is run over once (each seq_len bytes)
    top_k: int = 8  # next bytes kept per position (with their probabilities)


def cached_teacher(
    target_dir: Path,
    data: np.ndarray,
    dc: DistilConfig,
    seq_len: int,
    work_dir: Path,
    seed: int = 0,
    precision: str = "fp32",
) -> Teacher:
    """:func:`teacher_outputs`, cached in ``work_dir`` by a hash of the weights and ``data``."""
    import hashlib

    digest = hashlib.sha256((target_dir / "model.safetensors").read_bytes())
    digest.update(np.ascontiguousarray(data).tobytes())
    name = f"teacher-{digest.hexdigest()[:12]}-{dc.windows}x{seq_len}-top{dc.top_k}-seed{seed}-{precision}.npz"
    path = work_dir / name
    if path.is_file():
        return Teacher.load(path)
    teacher = teacher_outputs(GPT.load(target_dir), data, dc.windows, seq_len, dc.top_k, seed, precision=precision)
    teacher.save(path)
    return teacher


@torch.no_grad()
def teacher_outputs(
    target: GPT,
    data: np.ndarray,
    windows: int,
    seq_len: int,
    top_k: int = 8,
    seed: int = 0,
    chunk: int = 16,
    precision: str = "fp32",
) -> Teacher:
    """Run ``target`` once over ``windows`` seeded windows, ``chunk`` at a time, in ``precision``; keep its top-k."""
    dtype = PRECISIONS[precision]
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(data) - seq_len - 1, size=windows)
    tokens = np.stack([data[s : s + seq_len + 1] for s in starts])  # (W, T + 1)
    top_p = np.empty((windows, seq_len, top_k), dtype=np.float16)
    top_i = np.empty((windows, seq_len, top_k), dtype=np.uint8)
    target.eval()
    for a in range(0, windows, chunk):
        x = torch.from_numpy(tokens[a : a + chunk, :-1].astype(np.int64))
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            logits = target(x)  # (b, T, V)
        p, i = torch.softmax(logits.float(), -1).topk(top_k, dim=-1)
        top_p[a : a + chunk], top_i[a : a + chunk] = p.numpy(), i.numpy()
    return Teacher(tokens, top_p, top_i)


def lm_loss(
    logits: torch.Tensor, y: torch.Tensor, top_p: torch.Tensor | None = None, top_i: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean next-byte loss in nats: −log q(y), or with a teacher −Σ_j p_j log q(i_j) − (1 − Σ_j p_j) log q(y).

    logits (B, T, V); y (B, T); top_p, top_i (B, T, k).
    """
    logq = torch.log_softmax(logits.float(), -1)  # (B, T, V)
    true = logq.gather(-1, y.unsqueeze(-1)).squeeze(-1)  # (B, T)
    if top_p is None:
        return -true.mean()
    soft = (top_p * logq.gather(-1, top_i)).sum(-1)  # (B, T)
    return -(soft + (1 - top_p.sum(-1)).clamp_min(0) * true).mean()
