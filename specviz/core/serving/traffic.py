"""Traffic: prompt and output length distributions, and the context a decode step runs at."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.base.i18n import Message
from specviz.core import theory

MODES = ("open", "closed")  #: Poisson arrivals at a rate, or a fixed number of users
MAX_LENGTH = 1_048_576  #: the longest prompt or output accepted, tokens
MAX_USERS = 10_000  #: the most users of a closed loop (its distribution has a state per user)
MIN_OUTPUT = 2  #: the shortest output, tokens (TPOT is defined over the tokens after the first)


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: ``values`` (n,) integers ≥ 1 with probabilities ``weights`` (n,)."""

    values: np.ndarray
    weights: np.ndarray

    @staticmethod
    def _checked(values, name: str) -> np.ndarray:
        v = np.asarray(values, dtype=float).ravel()
        bad = ~np.isfinite(v) | (v < 1) | (v > MAX_LENGTH) | (v != np.round(v))
        if v.size == 0 or bad.any():
            shown = v[bad][0] if bad.any() else "none"
            raise Message(
                "{name} must be whole numbers of tokens in [1, {most}]; got {value}",
                name=name,
                most=MAX_LENGTH,
                value=shown,
            )
        return v

    @classmethod
    def fixed(cls, n, name: str = "length") -> Lengths:
        """Every request has ``n`` tokens."""
        return cls(cls._checked([n], name), np.ones(1))

    @classmethod
    def uniform(cls, lo, hi, name: str = "length") -> Lengths:
        """Uniform over the integers lo..hi (inclusive)."""
        lo_, hi_ = cls._checked([lo, hi], name)
        if hi_ < lo_:
            raise Message(
                "{name}: the range {lo}..{hi} is empty (the upper end is below the lower)",
                name=name,
                lo=int(lo_),
                hi=int(hi_),
            )
        v = np.arange(lo_, hi_ + 1)
        return cls(v, np.full(v.size, 1.0 / v.size))

    @classmethod
    def samples(cls, values, name: str = "length") -> Lengths:
        """The empirical distribution of measured lengths."""
        v, counts = np.unique(cls._checked(values, name), return_counts=True)
        return cls(v, counts / counts.sum())

    @property
    def mean(self) -> float:
        return float(self.values @ self.weights)

    def expect(self, f) -> float:
        """E[f(X)] for a vectorised ``f``."""
        return float(np.asarray(f(self.values), dtype=float) @ self.weights)


def _check_output(output: Lengths) -> None:
    if output.values.min() < MIN_OUTPUT:
        raise Message(
            "output lengths must be at least {least} tokens (TPOT is defined over the tokens after the first); got {value}",
            least=MIN_OUTPUT,
            value=int(output.values.min()),
        )


def decode_context(prompt: Lengths, output: Lengths) -> float:
    """L̄ = E[P] + E[G(G − 1)] / (2·E[G − 1]) tokens: the mean context over every request's decode steps, at
    P + 1 … P + G − 1 (prompt ⟂ output; length-biased, not E[P] + E[G] / 2)."""
    _check_output(output)
    return prompt.mean + output.expect(lambda g: g * (g - 1)) / (2.0 * output.expect(lambda g: g - 1))


def _context_density(prompt: Lengths, output: Lengths, points: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Decode-step contexts L (points,) and their share of steps (sums to 1): requests with P < L < P + G."""
    lo = prompt.values.min() + 1
    hi = prompt.values.max() + output.values.max() - 1
    ctx = np.unique(np.round(np.linspace(lo, hi, points)))
    p, g = prompt.values[None, :, None], output.values[None, None, :]
    inside = (ctx[:, None, None] > p) & (ctx[:, None, None] < p + g)  # (nL, nP, nG)
    share = (inside * prompt.weights[None, :, None] * output.weights[None, None, :]).sum(axis=(1, 2))
    return ctx, share / share.sum()


def mean_tokens_over_context(alpha_of_context, k, prompt: Lengths, output: Lengths) -> np.ndarray:
    """E[N] per round when α depends on the context: 1 / Σ_L π(L) / E[N](α(L), K), π the share of decode steps
    at L; ``alpha_of_context`` maps contexts to α; ``k`` (nK,) ≥ 1; returns (nK,)."""
    ctx, share = _context_density(prompt, output)
    a = theory.check_alpha(np.asarray(alpha_of_context(ctx), dtype=float))
    kk = np.atleast_1d(theory.check_k(k))
    per = theory.expected_tokens(np.broadcast_to(a, ctx.shape)[:, None], kk[None, :])  # (nL, nK)
    return 1.0 / (share[:, None] / per).sum(axis=0)
