"""The training loop: schedule, AdamW, one step, held-out evaluation, one model trained and saved."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from specviz.engine.models.gpt import GPT, GPTConfig, bits_per_byte
from specviz.engine.train.checkpoint import load_checkpoint, save_checkpoint
from specviz.engine.train.config import PRECISIONS, STORAGE_DTYPE, TrainConfig
from specviz.engine.train.data import batch, corpus_files, load_bytes
from specviz.engine.train.distil import DistilConfig, Teacher, cached_teacher, lm_loss
from specviz.engine.train.unlikelihood import UnlikelihoodConfig, unlikelihood_step


def learning_rate(step: int, tc: TrainConfig) -> float:
    """Linear warm-up to ``lr`` then cosine decay to ``min_lr`` at the last step."""
    if step < tc.warmup:
        return tc.lr * (step + 1) / tc.warmup
    progress = min(1.0, (step - tc.warmup) / max(1, tc.steps - tc.warmup))
    return tc.min_lr + 0.5 * (tc.lr - tc.min_lr) * (1 + math.cos(math.pi * progress))


def optimizer(model: GPT, tc: TrainConfig, fused: bool = True) -> torch.optim.AdamW:
    """AdamW (β = 0.9, 0.95): ``tc.weight_decay`` on matrices, none on norms and biases; ``fused``: one kernel."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": tc.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=tc.lr,
        betas=(0.9, 0.95),
        fused=fused,
        foreach=None if fused else True,
    )


def train_step(
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    data: np.ndarray | Teacher,
    tc: TrainConfig,
    rng: np.random.Generator,
    precision: str | None = None,
) -> float:
    """One optimiser step on ``tc.batch_size`` windows of text or :class:`Teacher`; mean loss in nats.

    Split into ``tc.micro_batches``, each loss / micro_batches; gradients clipped; bf16 autocast per ``precision``.
    """
    dtype = PRECISIONS[precision or tc.precision]
    if isinstance(data, Teacher):
        parts = data.batch(tc.batch_size, rng)  # x, y, top_p, top_i
    else:
        parts = batch(data, tc.batch_size, tc.seq_len, rng)  # x, y: (B, T) each
    device = next(model.parameters()).device
    opt.zero_grad(set_to_none=True)
    total = 0.0
    for x, y, *top in zip(*(t.chunk(tc.micro_batches) for t in parts), strict=True):
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            logits = model(x.to(device))  # (b, T, V)
        loss = lm_loss(logits, y.to(device), *(t.to(device) for t in top))
        (loss / tc.micro_batches).backward()
        total += loss.item() / tc.micro_batches
    torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
    opt.step()
    return total


@torch.no_grad()
def evaluate(model: GPT, data: np.ndarray, batches: int = 8, batch_size: int = 8) -> float:
    """Mean validation cross-entropy in bits per byte over fixed (seed 1234) full-context windows."""
    seq_len = model.cfg.block_size
    model.eval()
    rng = np.random.default_rng(1234)
    losses = []
    for _ in range(batches):
        x, y = batch(data, batch_size, seq_len, rng)
        losses.append(F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item())
    model.train()
    return bits_per_byte(float(np.mean(losses)))


@torch.no_grad()
def evaluate_all(model: GPT, data: np.ndarray, batch_size: int = 16) -> float:
    """Held-out bits per byte over every whole non-overlapping ``block_size`` window of ``data``."""
    t = model.cfg.block_size
    n = (len(data) - 1) // t
    windows = np.stack([data[i * t : i * t + t + 1] for i in range(n)]).astype(np.int64)  # (n, T + 1)
    model.eval()
    total = 0.0
    for a in range(0, n, batch_size):
        w = torch.from_numpy(windows[a : a + batch_size])
        logits = model(w[:, :-1])  # (b, T, V)
        total += F.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten(), reduction="sum").item()
    return bits_per_byte(total / (n * t))


def train_model(
    cfg: GPTConfig,
    tc: TrainConfig,
    train_data: np.ndarray | Teacher,
    work_dir: Path,
    progress: Callable[[int, float], None] | None = None,
    val_data: np.ndarray | None = None,
    init_from: Path | None = None,
    unlikelihood: UnlikelihoodConfig | None = None,
) -> tuple[GPT, dict]:
    """Train one model (from scratch, ``init_from``, or resumed from ``work_dir``); returns (model, log).

    ``log["curve"]`` rows: [step, train bits/byte, held-out bits/byte(, repeated-n-gram share)].
    """
    torch.manual_seed(tc.seed)  # initialisation only; the data order has its own generator
    model = GPT(cfg)
    if init_from is not None:  # a checkpoint in work_dir, if any, overrides this below
        start_from = GPT.load(init_from)
        if start_from.cfg != cfg:
            raise ValueError(f"{init_from} holds a {start_from.cfg} model; training a {cfg}")
        model.load_state_dict(start_from.state_dict())
    opt = optimizer(model, tc)
    rng = np.random.default_rng(tc.seed)
    start, curve, before, window = 0, [], 0.0, []  # window: training losses since the curve's last point
    resumed = load_checkpoint(work_dir, model, opt)
    if resumed is not None:
        start, rng_state, curve, before, window = resumed
        rng.bit_generator.state = rng_state
    model.train()
    t0, last_loss = time.perf_counter(), float("nan")
    for step in range(start, tc.steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, tc)
        if unlikelihood is not None and step % unlikelihood.every == 0:
            _, share = unlikelihood_step(model, opt, train_data, tc, unlikelihood, rng)
            window.append([share])  # a list: the window also holds the plain steps' losses (floats)
        else:
            last_loss = train_step(model, opt, train_data, tc, rng)
            window.append(last_loss)
        if progress is not None:
            progress(step + 1, bits_per_byte(last_loss))
        if tc.eval_every and val_data is not None and (step + 1) % tc.eval_every == 0:
            held_out = evaluate(model, val_data, batches=4)
            losses = [w for w in window if not isinstance(w, list)]
            row = [step + 1, round(bits_per_byte(float(np.mean(losses))), 4) if losses else None, round(held_out, 4)]
            shares = [w[0] for w in window if isinstance(w, list)]
            curve.append(row + [round(float(np.mean(shares)), 4)] if shares else row)
            window = []
        if (step + 1) % tc.checkpoint_every == 0 or step + 1 == tc.steps:
            seconds = before + time.perf_counter() - t0
            save_checkpoint(work_dir, model, opt, step + 1, rng.bit_generator.state, curve, seconds, window)
    log = {
        "steps": tc.steps,
        "resumed_from": start,
        "seconds_this_run": round(time.perf_counter() - t0, 1),
        "seconds_all_runs": round(before + time.perf_counter() - t0, 1),  # up to the last checkpoint, plus this run
        "final_train_bits_per_byte": round(bits_per_byte(last_loss), 4) if math.isfinite(last_loss) else None,
        "curve": curve,
    }
    return model.eval(), log


def train_one(
    name: str,
    cfg: GPTConfig,
    tc: TrainConfig,
    out_dir: Path,
    work_dir: Path,
    corpus_root: Path | None = None,
    command: str = "",
    progress: Callable[[int, float], None] | None = None,
    distil: DistilConfig | None = None,
    init_from: Path | None = None,
    unlikelihood: UnlikelihoodConfig | None = None,
) -> dict:
    """Train ``name`` ("target" or "draft") on the corpus split; write ``out_dir/name`` and its ``train.json``.

    Weights in :data:`STORAGE_DTYPE`; checkpoints in ``work_dir/name`` (rerun to resume). ``distil``
    learns from ``out_dir/target`` (:func:`cached_teacher`). Raises ValueError for ``distil`` with
    ``unlikelihood``.
    """
    if distil is not None and unlikelihood is not None:
        raise ValueError("unlikelihood training needs the plain text; it cannot be combined with distillation")
    train_files, val_files = corpus_files(corpus_root)  # one split for both models, whatever their seeds
    data: np.ndarray | Teacher = load_bytes(train_files)
    if distil is not None:
        data = cached_teacher(out_dir / "target", data, distil, tc.seq_len, work_dir, tc.seed, tc.precision)
    model, log = train_model(cfg, tc, data, work_dir / name, progress, load_bytes(val_files), init_from, unlikelihood)
    model.save(out_dir / name, dtype=STORAGE_DTYPE)
    record = {"config": asdict(cfg), "parameters": model.num_params(), "train": asdict(tc), "log": log}
    if distil is not None:
        record["distil"] = asdict(distil)
    if unlikelihood is not None:
        record["unlikelihood"] = asdict(unlikelihood)
    if init_from is not None:
        record["init_from"] = str(init_from)
        earlier = init_from / "train.json"  # the warm start's own training, so the card shows all of it
        if earlier.is_file():
            record["warmed_from"] = json.loads(earlier.read_text())
    (out_dir / name / "train.json").write_text(json.dumps({**record, "command": command}, indent=2) + "\n")
    return record
