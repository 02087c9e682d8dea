"""Mixture-of-experts layers in the roofline: how many distinct experts a step reads.

M = B·n tokens, each routed to k of E experts, expert e with π_e = min(1, k·load_e) (uniform k/E):
E[distinct] = Σ_e (1 − (1 − π_e)^M), exact for the mean by linearity.
"""

from __future__ import annotations

import numpy as np

from specviz.base.i18n import Message

__all__ = ["experts_on_busiest_rank", "experts_touched", "moe_layers", "zipf_load"]


def experts_touched(n_experts: int, top_k: int, tokens, load=None) -> np.ndarray:
    """Expected distinct routed experts, shape of ``tokens`` M (≥ 0), for E = ``n_experts``, k = ``top_k``
    (1 ≤ k ≤ E); ``load``: measured share of routed tokens per expert, shape (E,), summing to 1 (None: uniform)."""
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
    """Expected distinct experts on the busiest of ``ranks`` GPUs (expert parallel), shape of ``tokens``: n = ⌈E/ranks⌉
    per GPU, X ~ Binomial(n, 1 − (1 − k/E)^M) independent, E[max X] = Σ_{x<n} (1 − F(x)^ranks), F its CDF."""
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
    """Expert load ∝ 1 / e^skew for the e-th busiest of E experts (Zipf), shape (E,), sum 1; skew 0: uniform."""
    if not (isinstance(n_experts, int | np.integer) and n_experts >= 1):
        raise Message("experts: the number of experts must be an integer >= 1; got {value}", value=n_experts)
    if not (np.isfinite(skew) and 0 <= skew <= 4):
        raise Message("experts: the routing skew must be a number from 0 to 4; got {value}", value=skew)
    weights = 1.0 / np.arange(1, n_experts + 1, dtype=float) ** skew
    return weights / weights.sum()


def moe_layers(n_layers: int, dense_layers: int = 0, every: int = 1) -> int:
    """MoE layers of ``n_layers``: layer l (from 0) with l ≥ ``dense_layers`` and (l + 1) % ``every`` == 0
    (DeepSeek ``first_k_dense_replace``; Qwen ``decoder_sparse_step``, Llama-4 ``interleave_moe_layer_step``)."""
    return sum(1 for layer in range(dense_layers, n_layers) if (layer + 1) % every == 0)
