"""The modules a compiled decode step traces: one forward, a chain of greedy forwards, a greedy verify."""

from __future__ import annotations

import torch

from specviz.engine.models.gpt import GPT


class Step(torch.nn.Module):
    """``model.forward_at`` as a module's forward, so freezing can fold its weights."""

    def __init__(self, model: GPT):
        super().__init__()
        self.model = model

    def forward(self, idx, slots, positions, mask):
        return self.model.forward_at(idx, slots, positions, mask)


class Chain(torch.nn.Module):
    """One-token greedy forwards as one module: ``model`` a :class:`GPT` (one graph) or a CompiledGPT (its steps)."""

    def __init__(self, model, steps: int):
        super().__init__()
        self.model, self.steps = model, steps

    def forward(self, tokens, pos, window):
        # tokens (n,) fed at slots pos + 1 … pos + n, pos (1,), window (L, S) causal rows over the span
        known, out = tokens.shape[0], []
        for i in range(known + self.steps - 1):
            at = pos + 1 + i  # (1,): the slot of the token fed
            fed = tokens[i : i + 1] if i < known else out[-1]  # (1,)
            logits = self.model.forward_at(fed.view(1, 1), at, at, window[at])[0, -1]  # (V,)
            if i >= known - 1:  # from the last known token on, each forward predicts the next token
                out.append(logits.argmax(-1, keepdim=True))
        return torch.cat(out)  # (steps,)


class Verify(torch.nn.Module):
    """A greedy round's verify forward over K + 1 tokens and the greedy rule, as one module."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pending, drafts, pos, window):
        # pending (1,) the token at pos (1,), drafts (K,), window (L, S) causal rows over the span
        block = torch.cat([pending, drafts])  # (K + 1,) the tokens at slots pos … pos + K
        at = pos + torch.arange(block.numel(), device=pos.device)  # (K + 1,) slots and positions
        best = self.model.forward_at(block[None], at, at, window[at])[0].argmax(-1)  # (K + 1,)
        tests = drafts == best[:-1]  # (K,)
        accepted = tests.long().cumprod(0).sum(0, keepdim=True)  # (1,): the all-accepted prefix
        nxt = best.gather(0, accepted)  # (1,)
        return accepted, nxt, tests, torch.cat([block.gather(0, accepted), nxt]), pos + 1 + accepted
