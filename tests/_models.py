"""Small random models shared by the engine tests."""

from __future__ import annotations

import torch
from torch import nn

from specviz.models import GPT, GPTConfig


def build_gpt(cfg: GPTConfig, seed: int, std: float | None = None) -> GPT:
    """A model from ``torch.manual_seed(seed)`` in eval mode; ``std`` re-draws every weight matrix wider.

    The default init (std 0.02) gives near-uniform logits and outputs that repeat one
    byte; std 0.1 gives varied, context-dependent outputs, which a cache bug cannot hide in.
    """
    torch.manual_seed(seed)
    model = GPT(cfg)
    if std is not None:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    m.weight.normal_(0.0, std, generator=g)
    return model.eval()
