"""Small random models and checks shared by the engine tests (CPU and the gpu tier)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import nn

from specviz.engine import sampling
from specviz.engine.decoding import speculative_generate
from specviz.engine.models import GPT, GPTConfig

#: χ² p-value a correct (lossless) engine must exceed; a fresh seed fails with probability 1e-4.
P_OK = 1e-4


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


def noisy_copy(model: GPT, noise: float, seed: int) -> GPT:
    """A draft that agrees with ``model`` often but not always (same shape, perturbed weights)."""
    out = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in out.parameters():
            p.add_(torch.randn(p.shape, generator=g).to(p.device, p.dtype) * noise)
    return out.eval()


class ProtocolOnly:
    """A model seen through :class:`specviz.engine.models.Decodable` alone: any other attribute is an AttributeError.

    Counts forwards in ``calls`` and runs ``after_call()`` (if given) after each one.
    """

    __slots__ = ("_model", "after_call", "calls")

    def __init__(self, model, after_call: Callable[[], None] | None = None):
        self._model, self.after_call, self.calls = model, after_call, 0

    @property
    def context_length(self) -> int:
        return self._model.context_length

    @property
    def device(self) -> torch.device:
        return self._model.device

    @property
    def dtype(self) -> torch.dtype:
        return self._model.dtype

    def setup_cache(self, batch: int = 1, length: int | None = None) -> None:
        self._model.setup_cache(batch, length)

    def __call__(self, idx: torch.Tensor, start: int | None = None) -> torch.Tensor:
        out = self._model(idx, start)
        self.calls += 1
        if self.after_call is not None:
            self.after_call()
        return out


def check_lossless(device: str | torch.device, runs: int = 2000, generate=None) -> None:
    """First token and first pair of tokens are distributed as the target's, not the draft's (χ²).

    ``generate(target, draft, prompt, generator)`` → (2 new tokens, stats) is the engine under test
    (default: the chain engine at K = 2; a depth-2 tree engine covers the same three paths).
    One round of K = 2 (plus a second round when the first rejects at once) per seed, with
    a sharp tiny target and a different tiny draft (overlap ≈ 0.3, so all three paths occur:
    correction at position 1, correction at position 2, bonus). Runs on ``device`` in fp32
    with a generator there; the reference distributions come from full forwards in float64.
    """
    device = torch.device(device)
    target = build_gpt(GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=32), 10, std=0.3).to(device)
    draft = build_gpt(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32), 11, std=0.3).to(device)
    prompt = torch.tensor(list(b"x = 1"))
    pairs, paths = [], set()
    for seed in range(runs):
        g = torch.Generator(device).manual_seed(seed)
        if generate is None:
            out, stats = speculative_generate(target, draft, prompt, 2, 1.0, 2, generator=g, calibration_steps=0)
        else:
            out, stats = generate(target, draft, prompt, g)
        pairs.append(out.tolist())
        paths.add(stats.rounds[0].accepted)
    assert paths == {0, 1, 2}
    tokens = torch.tensor(pairs)  # (runs, 2)

    with torch.no_grad():
        x = prompt.to(device)
        p1 = torch.softmax(target(x[None])[0, -1].double(), -1).cpu()  # (V,)
        q1 = torch.softmax(draft(x[None])[0, -1].double(), -1).cpu()
        ext = torch.cat([x.repeat(256, 1), torch.arange(256, device=device)[:, None]], 1)  # (V, P+1)
        p2 = torch.softmax(target(ext)[:, -1].double(), -1).cpu()  # (V, V): p(x2 | x1)
    joint = p1[:, None] * p2  # (V, V)
    assert float(sampling.overlap(p1, q1)) < 0.6  # the draft is really different

    first = sampling.chi_square_gof(tokens[:, 0], p1 / p1.sum())
    assert first.p_value > P_OK, first
    assert sampling.chi_square_gof(tokens[:, 0], q1).p_value < 1e-6  # the test has power
    second = sampling.chi_square_gof(tokens[:, 1], joint.sum(0) / joint.sum())
    assert second.p_value > P_OK, second
    both = sampling.chi_square_gof(tokens[:, 0] * 256 + tokens[:, 1], (joint / joint.sum()).flatten())
    assert both.p_value > P_OK, both
