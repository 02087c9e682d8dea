"""Mixture-of-experts layers in the roofline: how many experts a step reads.

A layer with E routed experts and top-k routing sends each of the M = B·n tokens of a step to k
experts. The weights a decode step reads are those of the *distinct* experts touched, so verifying
K + 1 tokens at batch 1 reads up to (K + 1)·k experts where one decode step reads k: for an MoE
target, verification is not nearly free at small batch.

Under uniform routing each expert is chosen by a token with probability k / E, independently across
tokens, so

    E[distinct] = E · (1 − (1 − k/E)^M)        (M = 1 → k;  M → ∞ → E).

Real routers are skewed: with a measured load (the fraction of routed tokens each expert receives,
summing to 1) an expert is chosen by a token with probability π_e = min(1, k·load_e), and

    E[distinct] = Σ_e (1 − (1 − π_e)^M),

which is the uniform formula when every load_e = 1/E. Both are exact for the mean: a token picks an
expert at most once, so P(token picks e) = k·load_e, tokens route independently, and
P(e untouched) = (1 − π_e)^M; the expectation of the count is the sum (linearity). tests/core/test_moe.py
checks it against a Monte-Carlo of top-k routing.
"""

from __future__ import annotations

import numpy as np

from specviz.base.i18n import Message

__all__ = ["experts_on_busiest_rank", "experts_touched", "moe_layers", "zipf_load"]


def experts_touched(n_experts: int, top_k: int, tokens, load=None) -> np.ndarray:
    """Expected distinct routed experts a layer reads for ``tokens`` tokens (M, broadcasts).

    Parameters
    ----------
    n_experts, top_k : int
        E routed experts, k chosen per token (1 ≤ k ≤ E).
    tokens : array_like
        M = B·n tokens in the step (≥ 0).
    load : array_like, optional
        Measured fraction of routed tokens each expert receives, shape (E,), summing to 1; None is
        uniform routing, E·(1 − (1 − k/E)^M).

    Returns
    -------
    numpy.ndarray
        E[distinct experts], the shape of ``tokens``.
    """
    if not (
        isinstance(n_experts, int | np.integer) and isinstance(top_k, int | np.integer) and 1 <= top_k <= n_experts
    ):
        raise Message(
            "experts: top-k must be an integer from 1 to the number of experts; got k = {k}, E = {e}",
            k=top_k,
            e=n_experts,
        )
    m = np.asarray(tokens, dtype=float)
    if np.any(~np.isfinite(m) | (m < 0)):
        raise Message(
            "experts: tokens must be finite numbers >= 0; got {value}", value=m[~np.isfinite(m) | (m < 0)].flat[0]
        )
    if load is None:
        return np.asarray(n_experts * (1.0 - (1.0 - top_k / n_experts) ** m))[()]
    share = np.asarray(load, dtype=float)
    if share.shape != (n_experts,) or np.any(~np.isfinite(share) | (share < 0)) or not np.isclose(share.sum(), 1.0):
        raise Message(
            "experts: load must be {e} non-negative fractions summing to 1 (one per expert); got shape {shape}, sum {total:.4g}",
            e=n_experts,
            shape=share.shape,
            total=float(np.nansum(share)),
        )
    pick = np.minimum(1.0, top_k * share)  # (E,) chance a token picks each expert
    return np.asarray((1.0 - (1.0 - pick[:, None]) ** m.reshape(1, -1)).sum(axis=0).reshape(m.shape))[()]


def experts_on_busiest_rank(n_experts: int, top_k: int, tokens, ranks: int) -> np.ndarray:
    """Expected distinct routed experts touched on the busiest of ``ranks`` GPUs under expert parallelism.

    Expert parallelism places whole experts on GPUs, n = ⌈E / ranks⌉ per GPU, and a layer waits for
    its slowest GPU. Under uniform routing each expert is touched by at least one of M tokens with
    probability p = 1 − (1 − k/E)^M, so a GPU touches X ~ Binomial(n, p) of its experts (the counts
    of different GPUs treated as independent), and

        E[max over ranks of X] = Σ_{x=0}^{n−1} (1 − F(x)^ranks),

    F the Binomial(n, p) CDF. ranks = 1 is :func:`experts_touched`; as M → ∞ every GPU reads all n;
    at M = 1 the busiest GPU of 8 holding DeepSeek-V3's 256 experts reads about 2.5 of the 8 touched
    where tensor parallelism reads 1/8 of each of the 8.

    Parameters
    ----------
    n_experts, top_k : int
        E routed experts, k per token.
    tokens : array_like
        M = B·n tokens in the step.
    ranks : int
        GPUs the experts are spread over (≥ 1).

    Returns
    -------
    numpy.ndarray
        The expected count, the shape of ``tokens``.
    """
    if not (isinstance(ranks, int | np.integer) and 1 <= ranks <= n_experts):
        raise Message(
            "experts: ranks must be an integer from 1 to the number of experts {e}; got {value}",
            e=n_experts,
            value=ranks,
        )
    touched = np.asarray(experts_touched(n_experts, top_k, tokens), dtype=float)
    if ranks == 1:
        return touched[()]
    n = -(-n_experts // ranks)
    p = np.clip(touched / n_experts, 0.0, 1.0).reshape(-1, 1)  # (m, 1) chance one expert is touched
    x = np.arange(n + 1).reshape(1, -1)  # (1, n + 1)
    # binomial pmf from its logarithm, stable for n in the thousands
    log_comb = np.concatenate([[0.0], np.cumsum(np.log((n - np.arange(n)) / np.arange(1, n + 1)))])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pmf = log_comb + x * np.log(p) + (n - x) * np.log1p(-p)
    pmf = np.where(p == 0.0, (x == 0).astype(float), np.where(p == 1.0, (x == n).astype(float), np.exp(log_pmf)))
    cdf = np.clip(np.cumsum(pmf, axis=1), 0.0, 1.0)  # (m, n + 1)
    busiest = (1.0 - cdf[:, :n] ** ranks).sum(axis=1)
    return busiest.reshape(np.shape(touched))[()]


def zipf_load(n_experts: int, skew: float) -> np.ndarray:
    """A skewed expert load: the e-th busiest of E experts receives a share ∝ 1 / e^skew (Zipf's law),
    shape (E,), summing to 1; skew 0 is uniform routing. A one-number stand-in for a measured load
    (the shares a router's statistics give), for :func:`experts_touched`'s ``load``."""
    if not (isinstance(n_experts, int | np.integer) and n_experts >= 1):
        raise Message("experts: the number of experts must be an integer >= 1; got {value}", value=n_experts)
    if not (np.isfinite(skew) and 0 <= skew <= 4):
        raise Message("experts: the routing skew must be a number from 0 to 4; got {value}", value=skew)
    weights = 1.0 / np.arange(1, n_experts + 1, dtype=float) ** skew
    return weights / weights.sum()


def moe_layers(n_layers: int, dense_layers: int = 0, every: int = 1) -> int:
    """How many of ``n_layers`` layers are MoE: layer l (from 0) is, when l ≥ ``dense_layers`` and
    (l + 1) is a multiple of ``every`` (DeepSeek's ``first_k_dense_replace``; Qwen's
    ``decoder_sparse_step``, Llama-4's ``interleave_moe_layer_step``)."""
    return sum(1 for layer in range(dense_layers, n_layers) if (layer + 1) % every == 0)
