"""Where two greedy outputs first differ (:func:`first_divergence`), for the exactness checks."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.engine.models import Decodable


@dataclass(frozen=True)
class Divergence:
    """Where two greedy outputs first differ, and how close the target's choice was there."""

    position: int  # index into the new tokens (0-based)
    expected: int  # the target-only token
    got: int  # the speculative token
    margin: float  # target logit of its top-1 minus its top-2 at that position (full recompute)

    @property
    def near_tie(self) -> bool:
        """A margin below 1e-3 of the logit scale: a numerical near-tie, not a bug in the rule."""
        return self.margin < 1e-3


@torch.inference_mode()
def first_divergence(
    target: Decodable, prompt: torch.Tensor, expected: torch.Tensor, got: torch.Tensor
) -> Divergence | None:
    """First position where ``got`` ≠ ``expected`` and the top-1 − top-2 logit margin there, or None."""
    n = min(expected.numel(), got.numel())
    diff = (expected[:n] != got[:n]).nonzero()
    if diff.numel() == 0:
        return None
    pos = int(diff[0, 0])
    context = torch.cat([prompt.cpu(), expected[:pos].cpu()]).to(target.device)  # (T,)
    logits = target(context.view(1, -1))[0, -1].float()  # (V,)
    top = torch.topk(logits, 2).values
    return Divergence(pos, int(expected[pos]), int(got[pos]), float(top[0] - top[1]))
