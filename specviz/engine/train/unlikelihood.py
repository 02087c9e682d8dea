"""Sequence-level unlikelihood training against greedy loops (Welleck et al. 2019, §5.2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from specviz.engine.models.gpt import GPT
from specviz.engine.train.config import TrainConfig
from specviz.engine.train.data import batch


@dataclass(frozen=True)
class UnlikelihoodConfig:
    """Every ``every``-th step unlikelihood; n = 16 bytes, the loops' repeats."""

    every: int = 2  # one unlikelihood step in every `every` steps (1: all of them)
    prefix: int = 128  # bytes of training text before each greedy continuation
    new_tokens: int = 128  # bytes continued greedily per prefix
    n: int = 16  # the n-gram (bytes) whose repeats are penalised: about Welleck's 4 subword tokens

    def __post_init__(self):
        for name in ("every", "prefix", "new_tokens", "n"):
            if getattr(self, name) < 1:
                raise ValueError(f"unlikelihood {name} must be >= 1; got {getattr(self, name)}")


def repeated_ngram_mask(tokens: np.ndarray, n: int = 4) -> np.ndarray:
    """Tokens inside an ``n``-gram seen earlier in the row (Welleck et al. 2019, §5.2): (B, N) → (B, N) bool."""
    mask = np.zeros(tokens.shape, dtype=bool)  # (B, N)
    for row, seq in enumerate(np.asarray(tokens).tolist()):
        seen = set()
        for i in range(len(seq) - n + 1):
            gram = tuple(seq[i : i + n])
            if gram in seen:
                mask[row, i : i + n] = True
            seen.add(gram)
    return mask


def unlikelihood_loss(logits: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean −Σ mask_t · log max(1 − p(tokens_t), 1e-5) / (B · N); logits (B, N, V), tokens and mask (B, N)."""
    p = torch.softmax(logits.float(), -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, N)
    return -(torch.log((1 - p).clamp_min(1e-5)) * mask).sum() / mask.numel()


def unlikelihood_step(
    model: GPT,
    opt: torch.optim.Optimizer,
    data: np.ndarray,
    tc: TrainConfig,
    uc: UnlikelihoodConfig,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """One step on greedy continuations of training prefixes; returns (loss in nats, repeated-n-gram share)."""
    from specviz.engine.decoding import generate_target_only_batch

    x, _ = batch(data, tc.batch_size, uc.prefix, rng)  # (B, P)
    device = next(model.parameters()).device
    model.eval()
    cont, _ = generate_target_only_batch(model, list(x), uc.new_tokens, 0.0)  # (B, N)
    model.train()
    cont = cont.clone()  # out of inference mode, so autograd may keep it
    mask_np = repeated_ngram_mask(cont.numpy(), uc.n)  # (B, N)
    seq = torch.cat([x, cont], 1).to(device)  # (B, P + N)
    opt.zero_grad(set_to_none=True)
    logits = model(seq[:, :-1])[:, uc.prefix - 1 :]  # (B, N, V): the predictions of the continuation
    loss = unlikelihood_loss(logits, seq[:, uc.prefix :], torch.from_numpy(mask_np).to(device))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
    opt.step()
    return loss.item(), float(mask_np.mean())
