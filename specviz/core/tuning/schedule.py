"""The best K per load, the tiers (from concurrency, K) an engine takes, and what a schedule gains over one K."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from specviz.base.i18n import Message
from specviz.core.tuning.fit import LoadFit, predict


@dataclass(frozen=True)
class Choice:
    """The best K at one load by predicted output tokens/s, and that throughput beside no speculation's."""

    concurrency: int
    k: int
    tokens_per_s: float
    without_s: float  #: tokens/s at K = 0
    tpot_s: float


def best_k(fit: LoadFit, shares: Sequence[float], ks: Sequence[int], ttft_s, output_tokens: float) -> Choice:
    """The K of ``ks`` (which holds 0) with the most predicted tokens/s at ``fit``'s load; ties: the shorter draft.
    ``ttft_s``: one TTFT, or one per K of ``ks``."""
    ks = np.asarray(ks, dtype=int)
    if 0 not in ks:
        raise Message("the draft lengths compared must include 0 (no speculation); got {ks}", ks=ks.tolist())
    p = predict(fit, shares, ks, ttft_s, output_tokens)
    tps = p["tokens_per_s"]
    i = min(np.flatnonzero(tps == tps.max()), key=lambda j: ks[j])
    plain = float(tps[int(np.flatnonzero(ks == 0)[0])])
    return Choice(fit.concurrency, int(ks[i]), float(tps[i]), plain, float(p["tpot_s"][i]))


def tiers(choices: Sequence[Choice]) -> list[tuple[int, int]]:
    """(from concurrency, K) where K changes, by concurrency; the first tier starts at 1."""
    out: list[tuple[int, int]] = []
    for ch in sorted(choices, key=lambda c: c.concurrency):
        if not out or out[-1][1] != ch.k:
            out.append((1 if not out else ch.concurrency, ch.k))
    return out


def k_at(schedule: Sequence[tuple[int, int]], concurrency: int) -> int:
    """The schedule's K at a load: the last tier starting at or below it."""
    k = schedule[0][1]
    for start, kk in schedule:
        if concurrency >= start:
            k = kk
    return k


def mix_weights(loads: Sequence[int], weights: Mapping[int, float] | None) -> np.ndarray:
    """(n,) shares of time at each load, summing to 1 (None: equal); Message for a negative or all-zero mix."""
    w = np.array([1.0 if weights is None else float(weights.get(c, 0.0)) for c in loads])
    if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
        raise Message("the traffic mix must give each load a share >= 0, not all 0; got {mix!r}", mix=weights)
    return w / w.sum()


def static_vs_schedule(table: Mapping[tuple[int, int], float], loads: Sequence[int], ks: Sequence[int], weights=None):
    """(static K, its tokens/s, best K per load, the schedule's tokens/s, its gain) over a time-weighted mix;
    ``table[(K, C)]``: tokens/s."""
    w = mix_weights(loads, weights)
    per_k = {k: float(sum(wi * table[(k, c)] for wi, c in zip(w, loads, strict=True))) for k in ks}
    static = max(per_k, key=lambda k: (per_k[k], -k))
    best = {c: max(ks, key=lambda k, c=c: (table[(k, c)], -k)) for c in loads}
    sched = float(sum(wi * table[(best[c], c)] for wi, c in zip(w, loads, strict=True)))
    return static, per_k[static], best, sched, sched / per_k[static] - 1.0


def fixed_k_loss(speedups) -> tuple[int, np.ndarray]:
    """The one K (0..K_max) that loses least on average against each cell's best K, and each cell's loss
    1 − S(K) / S(K*); ``speedups`` (n, K_max): S at K = 1..K_max per cell (K = 0: S = 1)."""
    s = np.asarray(speedups, dtype=float)  # (n, K_max)
    s = np.concatenate([np.ones((s.shape[0], 1)), s], axis=1)  # (n, K_max + 1)
    ratio = s / s.max(axis=1, keepdims=True)
    k = int(np.argmax(ratio.mean(axis=0)))  # the first maximum: the shorter draft
    return k, 1.0 - ratio[:, k]


def warm_zero_tiers(choices: Sequence[Choice], fits: Sequence[LoadFit]) -> list[tuple[int, float, float]]:
    """(concurrency, tokens/s, change) of each load whose best K is 0, in a stack that still runs one draft
    forward per step at K = 0 (vLLM, SGLang: core.configs.switching): its step costs T0 (1 + r), r the load's
    fitted cost of one drafted token in target steps, an upper bound on one draft forward (it holds the verify's
    growth too), so tokens/s = the no-speculation figure / (1 + r)."""
    r = {f.concurrency: f.per_token for f in fits}
    return [
        (c.concurrency, c.without_s / (1 + r[c.concurrency]), 1 / (1 + r[c.concurrency]) - 1)
        for c in choices
        if c.k == 0 and c.concurrency in r
    ]
